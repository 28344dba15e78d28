//! `lancer-util`: what every layer uses and none owns — cached worker threads
//! ([`threads`]), containment of panics in third-party decoders at the boundary where
//! Lancer hands them bytes ([`contain`]), and the number of cores the process may use
//! ([`cores`]). No Lance format knowledge and no I/O.

pub mod contain;
pub mod threads;

/// Cores this process may use (`std::thread::available_parallelism`, at least 1),
/// asked once: on Linux each ask reads cgroup files, ~20 µs, which showed in the
/// per-query time of index searches.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |p| p.get()))
}
