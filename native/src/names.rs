//! Symbol-name normalization, the same rules as `collectors/symbols.py`.
//!
//! gcc's clones and split parts (`foo.constprop.0`, `foo.part.1`, `foo.cold`) belong to
//! their parent `foo`, and their numbering moves from build to build; the variants of a
//! C++ constructor or destructor (`C1`, `C2`, `D0`...) are one function, keyed by the
//! complete-object variant.

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

/// How a reference to the symbol is written in a fingerprint: its function's key, the
/// kind of part kept, numbers dropped.
pub fn reference_name(raw: &str) -> String {
    function_key(raw) + &part_kind(raw)
}

/// The function a symbol belongs to: its parent, a constructor or destructor variant as
/// the complete-object one (`_ZN3FooD0Ev.cold` -> `_ZN3FooD1Ev`), a versioned namespace
/// without its version (`unversioned`).
pub fn function_key(raw: &str) -> String {
    let mut parent = parent_symbol(raw);
    if let Some(end) = thunk_prefix_end(&parent) {
        parent = format!("_Z{}", &parent[end..]);
    }
    let parent = unversioned(&parent);
    match variant_position(&parent) {
        Some(at) => {
            let canonical = if parent.as_bytes()[at] == b'C' { "C1" } else { "D1" };
            format!("{}{}{}", &parent[..at], canonical, &parent[at + 2..])
        }
        None => parent,
    }
}

/// `_MAY_HOLD_VERSION`: `\dv\d`, `_v\d` or `lts_\d` somewhere (a quick no for most names).
fn may_hold_version(b: &[u8]) -> bool {
    (0..b.len()).any(|i| {
        let digit_at = |k: usize| k < b.len() && b[k].is_ascii_digit();
        (b[i] == b'v' && i > 0 && (b[i - 1].is_ascii_digit() || b[i - 1] == b'_') && digit_at(i + 1))
            || (b[i..].starts_with(b"lts_") && digit_at(i + 4))
    })
}

/// Where the trailing run of `\d+(_\d+)*` of `name` starts, and how many numbers it holds.
fn trailing_version(name: &[u8]) -> (usize, usize) {
    let (mut start, mut numbers) = (name.len(), 0);
    loop {
        let mut digits = start;
        while digits > 0 && name[digits - 1].is_ascii_digit() {
            digits -= 1;
        }
        if digits == start {
            return (start, numbers);
        }
        numbers += 1;
        if digits > 0 && name[digits - 1] == b'_' && digits >= 2 && name[digits - 2].is_ascii_digit() {
            start = digits - 1;
        } else {
            return (digits, numbers);
        }
    }
}

/// `_VERSIONED_NAMESPACE` of `collectors/symbols.py`: the name without its version when it is
/// one of a versioned namespace (`v9`, `v2_1`, `json_abi_v3_11_2`, `lts_20240116`).
fn version_dropped(name: &[u8]) -> Option<&[u8]> {
    let (start, numbers) = trailing_version(name);
    if numbers == 0 {
        return None;
    }
    let stem = &name[..start];
    let plain = stem == b"v";
    let worded = numbers >= 2 && stem.len() >= 3 && stem.ends_with(b"_v")
        && (stem[0].is_ascii_alphabetic() || stem[0] == b'_')
        && stem.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    (plain || worded || stem == b"lts_").then_some(stem)
}

/// A mangled name with the version of each versioned namespace dropped
/// (`_ZN3fmt2v96detail...` -> `_ZN3fmt1v6detail...`), the walk of `unversioned` in
/// `collectors/symbols.py`.
pub fn unversioned(raw: &str) -> String {
    let b = raw.as_bytes();
    if !raw.contains("_Z") || !may_hold_version(b) {
        return raw.to_string();
    }
    let (end, mut i) = (b.len(), 0);
    let mut out: Vec<u8> = Vec::with_capacity(end);
    let (mut nested, mut after_n) = (false, false);
    while i < end {
        let c = b[i];
        if c.is_ascii_digit() {
            let digits = i;
            while i < end && b[i].is_ascii_digit() {
                i += 1;
            }
            let length = raw[digits..i].parse::<usize>().unwrap_or(usize::MAX);
            if length == 0 || length > end - i {
                out.extend_from_slice(&b[digits..i]);
                nested = false;
                after_n = false;
                continue;
            }
            let mut name = &b[i..i + length];
            i += length;
            let follows_component = i < end && (b[i].is_ascii_digit() || b[i] == b'L');
            if nested && follows_component {
                if let Some(stem) = version_dropped(name) {
                    name = stem;
                }
            }
            out.extend_from_slice(name.len().to_string().as_bytes());
            out.extend_from_slice(name);
            after_n = false;
            continue;
        }
        let numbered = numbered_production(b, i);
        if numbered > i {
            out.extend_from_slice(&b[i..numbered]);
            if c != b'S' && c != b'T' {
                nested = false;
            }
            i = numbered;
            after_n = false;
            continue;
        }
        if c == b'N' {
            nested = true;
            after_n = true;
        } else if c == b'L' && nested {
            // gcc's internal-linkage mark before a component
        } else if !(after_n && b"rVKRO".contains(&c)) {
            nested = false;
            after_n = false;
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| raw.to_string())
}

/// `_numbered_production` of `collectors/symbols.py`: where a production at `i` holding a
/// number that is not a length ends (`S1_`, `T0_`, `Li3E`, `A4_`, `Dv4_`, `fp0_`), or `i`.
fn numbered_production(b: &[u8], i: usize) -> usize {
    let (end, c) = (b.len(), b[i]);
    let following = if i + 1 < end { Some(b[i + 1]) } else { None };
    if c == b'S' || c == b'T' {
        if let Some(f) = following {
            if f.is_ascii_digit() || f.is_ascii_uppercase() || f == b'_' {
                if let Some(offset) = b[i + 1..].iter().position(|&x| x == b'_') {
                    let close = i + 1 + offset;
                    if b[i + 1..close].iter().all(|x| x.is_ascii_digit() || x.is_ascii_uppercase()) {
                        return close + 1;
                    }
                }
                return i;
            }
        }
    }
    if c == b'L' {
        if let Some(f) = following {
            if BUILTIN_TYPES.contains(&f) {
                return match b[(i + 2).min(end)..].iter().position(|&x| x == b'E') {
                    Some(offset) => i + 2 + offset + 1,
                    None => i,
                };
            }
        }
    }
    if c == b'A' || (c == b'v' && i > 0 && b[i - 1] == b'D') || (c == b'p' && i > 0 && b[i - 1] == b'f') {
        let mut digits = i + 1;
        while digits < end && b[digits].is_ascii_digit() {
            digits += 1;
        }
        return if digits > i + 1 { digits } else { i };
    }
    i
}

/// Where the method's encoding starts in a thunk (`_ZTh`, `_ZTv`, `_ZTc` and their
/// call offsets), the `_THUNK` of `collectors/symbols.py`.
fn thunk_prefix_end(raw: &str) -> Option<usize> {
    let b = raw.as_bytes();
    if !raw.starts_with("_ZT") || b.len() < 4 {
        return None;
    }
    let number = |i: usize| -> Option<usize> {
        // n?\d+_
        let mut j = i + usize::from(b.get(i) == Some(&b'n'));
        let start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        (j > start && b.get(j) == Some(&b'_')).then_some(j + 1)
    };
    let call_offset = |i: usize| -> Option<usize> {
        match b.get(i)? {
            b'h' => number(i + 1),
            b'v' => number(number(i + 1)?),
            _ => None,
        }
    };
    match b[3] {
        b'h' | b'v' => call_offset(3),
        b'c' => call_offset(call_offset(4)?),
        _ => None,
    }
}

/// Whether a mangled C++ name has external linkage (no `L<digit>`, gcc's mark of
/// internal linkage, no anonymous namespace): false for C names.
pub fn has_external_linkage(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    raw.starts_with("_Z") && !raw.contains("_GLOBAL__N") && !bytes.windows(2).any(|w| w[0] == b'L' && w[1].is_ascii_digit())
}

const VARIANTS: [&[u8]; 8] = [b"C1", b"C2", b"C3", b"C4", b"D0", b"D1", b"D2", b"D4"];
const BUILTIN_TYPES: &[u8] = b"vwbcahstijlmxynoefdgz";
const QUALIFIERS: &[u8] = b"PRKVrO";

/// Where the constructor/destructor variant code of a mangled member name is: the walk
/// of `collectors/symbols.py`'s `variant_position`, which gives up on what it does not know.
pub fn variant_position(raw: &str) -> Option<usize> {
    if raw.starts_with("_ZN") {
        return nested_variant(raw.as_bytes(), 3);
    }
    if raw.starts_with("_ZZ") {
        // a member of a local class: the nested name after the function, found from the end
        let mut end = raw.len();
        while let Some(start) = raw[..end].rfind("EN") {
            if start <= 3 {
                break;
            }
            if let Some(position) = nested_variant(raw.as_bytes(), start + 2) {
                return Some(position);
            }
            end = start; // Python's `rfind("EN", 0, start)`
        }
    }
    None
}

fn nested_variant(b: &[u8], mut i: usize) -> Option<usize> {
    while i < b.len() && b"rVKRO".contains(&b[i]) {
        i += 1;
    }
    while i < b.len() {
        let c = b[i];
        i = if c.is_ascii_digit() {
            after_identifier(b, i)?
        } else if c == b'L' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            i + 1
        } else if c == b'S' {
            after_substitution(b, i)?
        } else if c == b'I' {
            after_template_arguments(b, i)?
        } else if c == b'B' {
            after_identifier(b, i + 1)?
        } else if (c == b'C' || c == b'D') && i + 2 <= b.len() && VARIANTS.contains(&&b[i..i + 2]) {
            return (i + 2 < b.len() && b"EIB".contains(&b[i + 2])).then_some(i);
        } else {
            return None;
        };
    }
    None
}

fn after_identifier(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == start {
        return None;
    }
    let length: usize = std::str::from_utf8(&b[start..i]).ok()?.parse().ok()?;
    let end = i.checked_add(length)?;
    (end <= b.len()).then_some(end)
}

fn after_substitution(b: &[u8], i: usize) -> Option<usize> {
    if i + 1 < b.len() && b"tabsiod".contains(&b[i + 1]) {
        return Some(i + 2);
    }
    let close = i + 1 + b[i + 1..].iter().position(|&c| c == b'_')?;
    b[i + 1..close].iter().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()).then_some(close + 1)
}

fn after_template_arguments(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            i = after_identifier(b, i)?;
            continue;
        }
        if c == b'I' || c == b'N' {
            depth += 1;
        } else if c == b'E' {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i + 1);
            }
        } else if c == b'L' {
            let close = i + b[i..].iter().position(|&x| x == b'E')?;
            let value = b.get(i + 2..close)?;
            let value = value.strip_prefix(b"n").unwrap_or(value);
            if !BUILTIN_TYPES.contains(b.get(i + 1)?) || value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return None;
            }
            i = close + 1;
            continue;
        } else if c == b'S' {
            i = after_substitution(b, i)?;
            continue;
        } else if c == b'T' {
            let close = i + b[i..].iter().position(|&x| x == b'_')?;
            if !b[i + 1..close].iter().all(u8::is_ascii_digit) {
                return None;
            }
            i = close + 1;
            continue;
        } else if !BUILTIN_TYPES.contains(&c) && !QUALIFIERS.contains(&c) {
            return None;
        }
        i += 1;
    }
    None
}

/// `\.cold(?:\.\d+)?(?:\.|$)` anywhere in the name.
pub fn is_cold_part(raw: &str) -> bool {
    raw.match_indices(".cold").any(|(i, _)| {
        let after = i + ".cold".len();
        after == raw.len() || raw.as_bytes()[after] == b'.'
    })
}
