//! Containing panics of third-party decoders (arrow-ipc, parquet, roaring, CSV/JSON
//! readers) at the boundary where Lancer hands them bytes: a corrupt input must end in
//! an error, not a crash. Sizes are validated before such calls so allocations stay
//! bounded; this is the last line of defence for what validation cannot foresee.
//!
//! While a contained call runs, the panic hook stays quiet on that thread (a caught
//! panic is reported as the caller's error, not as a panic message on stderr); panics
//! anywhere else are reported as before.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static CONTAINED: Cell<u32> = const { Cell::new(0) };
}

static HOOK: Once = Once::new();

fn install_quiet_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CONTAINED.with(|c| c.get()) == 0 {
                previous(info);
            }
        }));
    });
}

/// Runs `f`; a panic inside it comes back as `Err` with the panic's message.
pub fn contain<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_hook();
    CONTAINED.with(|c| c.set(c.get() + 1));
    let out = catch_unwind(AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(c.get().saturating_sub(1)));
    out.map_err(|p| {
        p.downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)")
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::contain;

    #[test]
    #[allow(clippy::panic)]
    fn a_panic_becomes_its_message() {
        assert_eq!(contain(|| 7), Ok(7));
        let r: Result<(), String> = contain(|| panic!("bad length {}", 3));
        assert_eq!(r, Err("bad length 3".to_string()));
        // Nesting keeps the count right.
        let r = contain(|| contain(|| -> u8 { panic!("inner") }));
        assert_eq!(r, Ok(Err("inner".to_string())));
    }
}
