//! A small bounded map for the read caches of a dataset handle: at most `capacity`
//! entries, the least recently used one evicted first. Entries are `Arc`s, so an
//! evicted value stays alive for readers still holding it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// A thread-safe least-recently-used map of `Arc<V>`.
pub struct Lru<K, V> {
    inner: Mutex<Inner<K, V>>,
    capacity: usize,
}

struct Inner<K, V> {
    map: HashMap<K, (Arc<V>, u64)>,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map holding at most `capacity` entries (0: nothing is kept).
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                tick: 0,
            }),
            capacity,
        }
    }

    /// The value under `key`, marked as just used.
    pub fn get(&self, key: &K) -> Option<Arc<V>> {
        let mut g = self.inner.lock().ok()?;
        g.tick += 1;
        let tick = g.tick;
        let e = g.map.get_mut(key)?;
        e.1 = tick;
        Some(e.0.clone())
    }

    /// Stores `value` under `key`, evicting the least recently used entry when full.
    pub fn insert(&self, key: K, value: Arc<V>) {
        if self.capacity == 0 {
            return;
        }
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        g.tick += 1;
        let tick = g.tick;
        if !g.map.contains_key(&key) && g.map.len() >= self.capacity {
            // A linear scan: caches are small and misses cost a file open anyway.
            if let Some(old) = g
                .map
                .iter()
                .min_by_key(|(_, v)| v.1)
                .map(|(k, _)| k.clone())
            {
                g.map.remove(&old);
            }
        }
        g.map.insert(key, (value, tick));
    }

    /// The most entries it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|g| g.map.len()).unwrap_or(0)
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let c: Lru<u32, u32> = Lru::new(2);
        c.insert(1, Arc::new(10));
        c.insert(2, Arc::new(20));
        assert_eq!(c.get(&1).as_deref(), Some(&10)); // 2 is now the oldest
        c.insert(3, Arc::new(30));
        assert_eq!(c.len(), 2);
        assert!(c.get(&2).is_none());
        assert_eq!(c.get(&1).as_deref(), Some(&10));
        assert_eq!(c.get(&3).as_deref(), Some(&30));
        c.insert(3, Arc::new(31)); // replacing does not evict
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&3).as_deref(), Some(&31));
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let c: Lru<u32, u32> = Lru::new(0);
        c.insert(1, Arc::new(10));
        assert!(c.is_empty());
        assert!(c.get(&1).is_none());
    }
}
