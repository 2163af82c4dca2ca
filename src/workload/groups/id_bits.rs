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

/// Each byte's value as a lowercase hex digit; 0x80 and above: none.
const DIGIT: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'a' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};

/// (dashed, bits) of an id written as 32 lowercase hex digits, bare or with
/// a UUID's dashes; None for any other text.
pub fn bits(id: &str) -> Option<(bool, u128)> {
    bits_of(id.as_bytes())
}

/// [`bits`] of an id's bytes: Some only for bytes of hex digits (and
/// dashes), so bytes that give bits are text (UTF-8) as they are.
pub fn bits_of(b: &[u8]) -> Option<(bool, u128)> {
    // Read for every event of an audit, often twice: digits looked up in
    // a table and checked once at the end, not branched on one by one.
    let (dashed, runs): (bool, &[(usize, usize)]) = match b.len() {
        32 => (false, &[(0, 32)]),
        36 if DASHES.iter().all(|&i| b[i] == b'-') => {
            (true, &[(0, 8), (9, 13), (14, 18), (19, 23), (24, 36)])
        }
        _ => return None,
    };
    let mut v: u128 = 0;
    let mut bad = 0u8;
    for &(from, to) in runs {
        for &c in &b[from..to] {
            let d = DIGIT[usize::from(c)];
            bad |= d;
            v = (v << 4) | u128::from(d & 0xf);
        }
    }
    (bad < 0x80).then_some((dashed, v))
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
