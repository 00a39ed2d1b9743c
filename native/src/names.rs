//! Symbol-name normalization, the same rules as `collectors/symbols.py`.
//!
//! gcc's clones and split parts (`foo.constprop.0`, `foo.part.1`, `foo.cold`) belong to
//! their parent `foo`, and their numbering moves from build to build.

const CLONE_WORDS: [&str; 9] = [
    "constprop", "isra", "part", "cold", "lto_priv", "localalias", "clone", "llvm", "specialized",
];

/// Where the first clone suffix starts (`_CLONE_SUFFIX.search`), if any.
fn clone_suffix_start(raw: &str) -> Option<usize> {
    let bytes = raw.as_bytes();
    (0..bytes.len()).find(|&i| bytes[i] == b'.' && CLONE_WORDS.iter().any(|word| raw[i + 1..].starts_with(word)))
}

/// `foo.constprop.0.isra.1` -> `foo`; static locals lose their number: `counter.3` -> `counter`.
pub fn parent_symbol(raw: &str) -> String {
    let stem = match clone_suffix_start(raw) {
        Some(start) => &raw[..start],
        None => raw,
    };
    let trimmed = strip_numeric_suffix(stem);
    if trimmed.is_empty() { raw.to_string() } else { trimmed.to_string() }
}

/// `(?:\.\d+)+$` removed.
fn strip_numeric_suffix(stem: &str) -> &str {
    let bytes = stem.as_bytes();
    let mut end = bytes.len();
    loop {
        let mut digits = end;
        while digits > 0 && bytes[digits - 1].is_ascii_digit() {
            digits -= 1;
        }
        if digits == end || digits == 0 || bytes[digits - 1] != b'.' {
            return &stem[..end];
        }
        end = digits - 1;
    }
}

/// The clone/part suffixes without their numbers: `.constprop.cold`.
pub fn part_kind(raw: &str) -> String {
    let Some(start) = clone_suffix_start(raw) else { return String::new() };
    let bytes = raw[start..].as_bytes();
    let mut kind = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'.' && i + 1 < bytes.len() && bytes[i + 1].is_ascii_digit() {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            kind.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(kind).unwrap_or_default()
}

/// How a reference to the symbol is written in a fingerprint: numbers dropped, kind kept.
pub fn reference_name(raw: &str) -> String {
    parent_symbol(raw) + &part_kind(raw)
}

/// `\.cold(?:\.\d+)?(?:\.|$)` anywhere in the name.
pub fn is_cold_part(raw: &str) -> bool {
    raw.match_indices(".cold").any(|(i, _)| {
        let after = i + ".cold".len();
        after == raw.len() || raw.as_bytes()[after] == b'.'
    })
}
