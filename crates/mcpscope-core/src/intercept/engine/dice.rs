//! The gate's dice: a seeded generator, so a run with fault rules can be
//! repeated, and what it draws for `corrupt`.

use crate::intercept::rule::Corruption;

/// A small, seedable generator (SplitMix64): the same seed gives the same
/// dice on every machine and in every version.
#[derive(Clone, Debug)]
pub struct Dice(u64);

impl Dice {
    pub fn new(seed: u64) -> Self {
        Dice(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

/// `raw` broken as `how` says, with its line ending, and what was done.
pub fn corrupt(raw: &[u8], ending: &[u8], how: Corruption, dice: &mut Dice) -> (Vec<u8>, String) {
    let how = match how {
        Corruption::Any => Corruption::NAMES[dice.below(Corruption::NAMES.len() as u64) as usize].1,
        h => h,
    };
    let ending = if ending.is_empty() { b"\n".as_slice() } else { ending };
    let mut out;
    let said = match how {
        Corruption::Truncate => {
            let keep = raw.len() / 2;
            out = raw[..keep].to_vec();
            format!("corrupted: cut to its first {keep} of {} bytes", raw.len())
        }
        Corruption::FlipBytes => {
            out = raw.to_vec();
            let n = (raw.len() / 64).clamp(1, 8);
            let mut at = Vec::new();
            for _ in 0..n.min(out.len()) {
                let i = dice.below(out.len() as u64) as usize;
                // Never a newline: the frame must stay one line.
                let flipped = out[i] ^ (1 << dice.below(7));
                out[i] = if flipped == b'\n' || flipped == b'\r' {
                    b'~'
                } else {
                    flipped
                };
                at.push(i);
            }
            format!("corrupted: flipped bits at byte(s) {at:?}")
        }
        Corruption::BadUtf8 => {
            out = raw.to_vec();
            let i = out.len() / 2;
            out.splice(i..i, [0xC3, 0x28, 0xFF]);
            format!("corrupted: bytes that are not UTF-8 put at byte {i}")
        }
        Corruption::NotJson => {
            out = b"this is not JSON (mcpscope fault rule)".to_vec();
            "corrupted: sent a line that is not JSON instead".to_owned()
        }
        Corruption::Any => unreachable!("drawn above"),
    };
    out.extend_from_slice(ending);
    (out, said)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::CALL;
    use super::*;
    use serde_json::Value;

    #[test]
    fn corrupt_breaks_each_way_on_one_line() {
        let mut dice = Dice::new(1);
        for (how, _) in Corruption::NAMES {
            let c = Corruption::NAMES.iter().find(|(n, _)| n == how).unwrap().1;
            let (bytes, said) = corrupt(CALL.as_bytes(), b"\n", c, &mut dice);
            assert!(
                bytes.ends_with(b"\n") && !bytes[..bytes.len() - 1].contains(&b'\n'),
                "{said}"
            );
            assert_ne!(&bytes[..bytes.len() - 1], CALL.as_bytes(), "{how}: {said}");
            if c != Corruption::FlipBytes {
                // (Flipped bits inside a string can leave valid JSON with wrong data.)
                assert!(serde_json::from_slice::<Value>(&bytes).is_err(), "{how}: {said}");
            }
        }
    }
}
