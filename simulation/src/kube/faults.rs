//! Injected API faults: a seeded share of writes answering 409 Conflict.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Decides, reproducibly from a seed, which writes get an injected 409 Conflict.
///
/// A random number is drawn only for writes of an actor with a non-zero rate, so turning
/// the fault on at some step does not shift earlier or unrelated decisions.
#[derive(Debug)]
pub struct ConflictFaults {
    rates: BTreeMap<String, f64>,
    rng: ChaCha8Rng,
}

impl ConflictFaults {
    /// No faults, with the random stream seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rates: BTreeMap::new(),
            // A distinct stream from the one used for generated names.
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6b75_6265_666c_7431),
        }
    }

    /// Sets the share (0..=1, clamped) of `actor`'s writes answering 409; 0 turns it off.
    pub fn set_rate(&mut self, actor: &str, rate: f64) {
        let rate = if rate.is_finite() {
            rate.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if rate > 0.0 {
            self.rates.insert(actor.to_string(), rate);
        } else {
            self.rates.remove(actor);
        }
    }

    /// The configured rate for `actor`.
    pub fn rate(&self, actor: &str) -> f64 {
        self.rates.get(actor).copied().unwrap_or(0.0)
    }

    /// Removes every configured fault.
    pub fn clear(&mut self) {
        self.rates.clear();
    }

    /// Whether this write of `actor` gets an injected conflict.
    pub fn should_conflict(&mut self, actor: &str) -> bool {
        match self.rates.get(actor) {
            Some(&rate) => self.rng.random_bool(rate),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decisions(seed: u64) -> Vec<bool> {
        let mut faults = ConflictFaults::new(seed);
        faults.set_rate("operator", 0.3);
        (0..200)
            .map(|_| faults.should_conflict("operator"))
            .collect()
    }

    #[test]
    fn same_seed_same_decisions_and_rate_roughly_honoured() {
        assert_eq!(decisions(7), decisions(7));
        assert_ne!(decisions(7), decisions(8));
        let hits = decisions(7).iter().filter(|hit| **hit).count();
        assert!(
            (30..=90).contains(&hits),
            "{hits} conflicts out of 200 at rate 0.3"
        );
        let mut faults = ConflictFaults::new(1);
        faults.set_rate("operator", 1.0);
        assert!(!faults.should_conflict("kubelet"));
        assert!(faults.should_conflict("operator"));
        faults.set_rate("operator", 0.0);
        assert!(!faults.should_conflict("operator"));
    }
}
