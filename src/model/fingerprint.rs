//! A world's fingerprint: the 64 bits by which the checker knows a state
//! it has seen, and the hashers of the tables keyed by them.
//!
//! Why not std's `DefaultHasher`: SipHash is built to resist an attacker
//! choosing keys, which no state here does, and CI runs the checker in a
//! debug build, where SipHash's byte-at-a-time path and its debug
//! assertions took over half of every exploration (`perf record` of
//! `one_runner_of_two_replicas_holds_under_a_network_fault`). The world's
//! `Hash` writes small integers, a field at a time; this hasher takes each
//! as one word.
//!
//! Quality: each word moves the state by a rotation, an xor and a multiply
//! by an odd constant, each a bijection, and the finish is murmur3's
//! avalanche (a bijection too). So two writes of equal length that differ
//! in one word never collide, and other pairs collide as rarely as 64
//! random bits do. A collision would merge two states; every configuration
//! CI checks explores the same number of states under this hasher as it
//! did under SipHash.

use std::hash::{BuildHasherDefault, Hash, Hasher};

/// The fingerprint of anything hashable (a world).
pub fn of(value: &impl Hash) -> u64 {
    let mut hasher = Fingerprinter::default();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A table keyed by fingerprints: they are spread already, so the table
/// takes them as they are.
pub type Table<V> = std::collections::HashMap<u64, V, BuildHasherDefault<AsIs>>;

/// Mixes word by word (see the module doc).
pub struct Fingerprinter(u64);

impl Default for Fingerprinter {
    fn default() -> Self {
        // Any odd start: the first digits of pi.
        Fingerprinter(0x243f_6a88_85a3_08d3)
    }
}

impl Fingerprinter {
    fn word(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for Fingerprinter {
    fn write(&mut self, bytes: &[u8]) {
        // A str or byte slice: its length, then eight bytes a word, the
        // last zero-padded ("ab" and "ab\0" pad alike: the length tells).
        self.word(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.word(n.into());
    }

    fn write_u16(&mut self, n: u16) {
        self.word(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.word(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.word(n);
    }

    fn write_u128(&mut self, n: u128) {
        self.word(n as u64);
        self.word((n >> 64) as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.word(n as u64);
    }

    fn write_i8(&mut self, n: i8) {
        self.word(n as u64);
    }

    fn write_i16(&mut self, n: i16) {
        self.word(n as u64);
    }

    fn write_i32(&mut self, n: i32) {
        self.word(n as u64);
    }

    fn write_i64(&mut self, n: i64) {
        self.word(n as u64);
    }

    fn write_i128(&mut self, n: i128) {
        self.write_u128(n as u128);
    }

    fn write_isize(&mut self, n: isize) {
        self.word(n as u64);
    }

    fn finish(&self) -> u64 {
        // murmur3's fmix64.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// The hasher of a [`Table`]: a fingerprint is its own hash.
#[derive(Default)]
pub struct AsIs(u64);

impl Hasher for AsIs {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys come here; anything else is folded in, unspread.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_apart_is_another_print() {
        let base = [3u32, 1, 4, 1, 5, 9, 2, 6];
        let print = of(&base);
        for at in 0..base.len() {
            for delta in [1u32, 2, 1 << 31] {
                let mut other = base;
                other[at] ^= delta;
                assert_ne!(of(&other), print, "word {at} ^ {delta}");
            }
        }
        // Same words, other grouping: the lengths tell them apart.
        assert_ne!(
            of(&([1u8].as_slice(), [2u8, 3].as_slice())),
            of(&([1u8, 2].as_slice(), [3u8].as_slice()))
        );
        assert_ne!(of(&"ab"), of(&"ab\0"));
    }
}
