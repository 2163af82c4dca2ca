//! The 128-bit event ids the bench makes, as text and back: 32 lowercase
//! hex digits, bare or with a UUID's four dashes (8-4-4-4-12). The
//! generator prints them, the audit's id set holds them as their bits; a
//! text is read as bits only when printing the bits gives the same text
//! back, so the two views never disagree.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

/// Where a UUID's text has its dashes.
const DASHES: [usize; 4] = [8, 13, 18, 23];

/// (dashed, bits) of an id written as 32 lowercase hex digits, bare or with
/// a UUID's dashes; None for any other text.
pub fn bits(id: &str) -> Option<(bool, u128)> {
    bits_of(id.as_bytes())
}

/// [`bits`] of an id's bytes: Some only for bytes of hex digits (and
/// dashes), so bytes that give bits are text (UTF-8) as they are.
pub fn bits_of(b: &[u8]) -> Option<(bool, u128)> {
    // Read for every event of an audit, often twice: eight digits at a
    // time, as the bytes of a u64 ([`hex8`]).
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let half = |i: usize| u64::from(u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes")));
    let (dashed, words) = match b.len() {
        32 => (false, [word(0), word(8), word(16), word(24)]),
        36 if DASHES.iter().all(|&i| b[i] == b'-') => (
            true,
            [
                word(0),
                half(9) | half(14) << 32,
                half(19) | half(24) << 32,
                word(28),
            ],
        ),
        _ => return None,
    };
    let mut v: u128 = 0;
    for w in words {
        v = (v << 32) | u128::from(hex8(w)?);
    }
    Some((dashed, v))
}

/// The value of eight lowercase hex digits, the first the most
/// significant, given as the bytes of `w` (the first the lowest); None
/// if a byte is no such digit. Each byte is compared with the ends of
/// the digits' two ranges at once: a byte below 0x80 plus at most 0x50
/// stays below 0x100, so no sum carries into the next byte, and its top
/// bit says whether the byte reached the range's end.
fn hex8(w: u64) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    const LOW: u64 = ONES * 0x0f;
    if w & HIGH != 0 {
        return None;
    }
    let at_least = |c: u8| w.wrapping_add(ONES * (0x80 - u64::from(c))) & HIGH;
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let letter = at_least(b'a') & !at_least(b'f' + 1);
    if digit | letter != HIGH {
        return None;
    }
    // '0'..'9' are 0x30..0x39, 'a'..'f' 0x61..0x66: the low four bits,
    // plus 9 for a letter.
    let nibbles = (w & LOW) + (letter >> 7) * 9;
    // Two digits to a byte, at every other byte, then those four bytes
    // together, the first digits' the most significant.
    const PAIR: u64 = 0x000f_000f_000f_000f;
    let pairs = ((nibbles & PAIR) << 4) | ((nibbles >> 8) & PAIR);
    let packed = (pairs | pairs >> 8) & 0x0000_ffff_0000_ffff;
    let packed = (packed | packed >> 16) & 0xffff_ffff;
    Some((packed as u32).swap_bytes())
}

/// `v` as 32 lowercase hex digits, with a UUID's dashes if `dashed`.
pub fn text(v: u128, dashed: bool) -> String {
    // By hand: the generator runs this once per fresh event on the load's
    // hot path, where two `format!`s (and their fmt machinery) showed in
    // profiles.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(36);
    for i in 0..32 {
        if dashed && matches!(i, 8 | 12 | 16 | 20) {
            s.push('-');
        }
        s.push(HEX[(v >> (124 - 4 * i)) as usize & 0xf] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_the_lower_hex_grouped_8_4_4_4_12_and_reads_back() {
        for v in [
            0u128,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
            1 << 77,
        ] {
            let dashed = text(v, true);
            let d: Vec<usize> = dashed.match_indices('-').map(|(i, _)| i).collect();
            assert_eq!(d, DASHES, "{dashed}");
            assert_eq!(dashed.replace('-', ""), format!("{v:032x}"));
            assert_eq!(text(v, false), format!("{v:032x}"));
            assert_eq!(bits(&dashed), Some((true, v)));
            assert_eq!(bits(&text(v, false)), Some((false, v)));
        }
    }

    /// The plain reading: every digit looked at one by one.
    fn reference(b: &[u8]) -> Option<(bool, u128)> {
        let dashed = match b.len() {
            32 => false,
            36 if DASHES.iter().all(|&i| b[i] == b'-') => true,
            _ => return None,
        };
        let mut v: u128 = 0;
        for (i, &c) in b.iter().enumerate() {
            if dashed && DASHES.contains(&i) {
                continue;
            }
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return None,
            };
            v = (v << 4) | u128::from(d);
        }
        Some((dashed, v))
    }

    #[test]
    fn bits_are_read_as_the_plain_reading_reads_them_with_any_byte_anywhere() {
        let mut n = 0;
        for v in [0u128, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210] {
            for dashed in [false, true] {
                let good = text(v, dashed).into_bytes();
                assert_eq!(bits_of(&good), Some((dashed, v)));
                for at in 0..good.len() {
                    for c in 0..=255u8 {
                        let mut b = good.clone();
                        b[at] = c;
                        assert_eq!(bits_of(&b), reference(&b), "{b:?}");
                        n += usize::from(bits_of(&b).is_some());
                    }
                }
            }
        }
        // Each digit may be any of 16, a dash only a dash.
        assert_eq!(n, 3 * (32 * 16 + 36 * 16 - 4 * 15));
    }

    #[test]
    fn only_text_that_prints_back_the_same_is_read_as_bits() {
        for id in [
            "0123ABCD-4567-89ef-0123-456789abcdef",
            "0123abcd4-567-89ef-0123-456789abcdef",
            "0123abcd-4567-89ef-0123-456789abcdeg",
            "+123abcd456789ef0123456789abcdef",
            "0123abcd-4567-89ef-0123-456789abcde",
            "e1",
            "",
        ] {
            assert_eq!(bits(id), None, "{id}");
        }
    }
}
