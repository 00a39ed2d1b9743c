//! One binary analysed: functions grouped from their parts, fingerprinted, and data
//! objects fingerprinted, as `collectors/static_analysis.py` does.  Names a user reads
//! (demangled, made unique) are left to the Python caller: here a function or object is
//! its index, and references are indices.

use std::collections::{HashMap, HashSet};

use blake2::Digest;

use crate::elf::{hex, Blake2b128, Image, Section, Symbol, R_X86_64_RELATIVE, STT_FUNC, STT_OBJECT};
use crate::names::{function_key, has_external_linkage, is_cold_part, parent_symbol, part_kind, reference_name, unversioned};
use crate::resolver::{Callee, CodeRange, DataRange, References, Resolver};
use crate::scan::scan;

pub struct Function {
    pub key: String, // names::function_key of its symbols
    pub local: bool,
    pub file: String,
    pub parts: Vec<Symbol>, // its symbol at each address it has code at
}

pub struct FunctionRecord {
    pub raw: String,        // the parent symbol of the primary part
    pub parts: Vec<String>, // sorted raw names
    pub address: u64,       // of the primary part
    pub size: u64,
    pub instructions: usize,
    pub fingerprint: String,
    pub callee_functions: Vec<usize>,
    pub callee_stubs: Vec<String>,
    pub data_refs: Vec<usize>,
    pub has_cold_part: bool,
}

pub struct DataObject {
    pub symbol: Symbol,
    pub token: String,
}

pub struct ObjectRecord {
    pub section: String,
    pub writable: bool,
    pub fingerprint: String,
}

pub struct Analysis {
    pub functions: Vec<(Function, FunctionRecord)>,
    pub objects: Vec<(DataObject, ObjectRecord)>, // by address
}

/// Among symbols at one address, the order a user expects: global, then plain, then short.
fn alias_order(s: &Symbol) -> (bool, bool, usize, String) {
    (s.local, s.raw.starts_with('_'), s.raw.chars().count(), s.raw.clone())
}

/// Symbols grouped by address in first-seen order, each group in alias order (its primary first).
fn by_address<'s>(symbols: impl Iterator<Item = &'s Symbol>) -> Vec<Vec<&'s Symbol>> {
    let mut order: Vec<u64> = Vec::new();
    let mut groups: HashMap<u64, Vec<&Symbol>> = HashMap::new();
    for symbol in symbols {
        groups.entry(symbol.address).or_insert_with(|| { order.push(symbol.address); Vec::new() }).push(symbol);
    }
    order
        .iter()
        .map(|address| {
            let mut aliases = groups.remove(address).unwrap();
            aliases.sort_by_cached_key(|s| alias_order(s));
            aliases
        })
        .collect()
}

/// Functions by key, each with its symbol at every address it has code at (the symbols at
/// one address are one body, a part of each of their keys), and for each address its
/// primary symbol with the index of the function that symbol belongs to.
pub fn group_functions(image: &Image) -> (Vec<Function>, Vec<(Symbol, usize)>) {
    let in_code = |s: &&Symbol| s.kind == STT_FUNC && s.size != 0 && image.section_at(s.address).is_some_and(|x| x.executable() && !x.nobits);
    let addresses = by_address(image.symbols.iter().filter(in_code));
    let global_keys: HashSet<String> = addresses.iter().filter(|a| !a[0].local).map(|a| function_key(&a[0].raw)).collect();
    let mut functions: Vec<Function> = Vec::new();
    let mut index_of: HashMap<(String, String), usize> = HashMap::new();
    let mut primaries = Vec::new();
    for aliases in addresses {
        let mut here: Vec<usize> = Vec::new();
        for symbol in &aliases {
            let key = function_key(&symbol.raw);
            // A clone of a global function is a local symbol: it still belongs to the global;
            // so does a C++ function of external linkage cloned in each translation unit.
            let local = symbol.local && !global_keys.contains(&key) && !has_external_linkage(&key);
            let file = if local { symbol.file.clone() } else { String::new() };
            let index = *index_of.entry((key.clone(), file.clone())).or_insert_with(|| {
                functions.push(Function { key, local, file, parts: Vec::new() });
                functions.len() - 1
            });
            if !here.contains(&index) {
                here.push(index);
                functions[index].parts.push((*symbol).clone());
            }
        }
        primaries.push((aliases[0].clone(), here[0]));
    }
    (functions, primaries)
}

pub fn data_objects(image: &Image) -> Vec<DataObject> {
    let is_object = |s: &&Symbol| s.kind == STT_OBJECT && s.size != 0 && image.section_at(s.address).is_some();
    let mut objects: Vec<DataObject> =
        by_address(image.symbols.iter().filter(is_object)).into_iter().map(|a| DataObject { token: reference_name(&a[0].raw), symbol: a[0].clone() }).collect();
    objects.sort_by_key(|o| o.symbol.address);
    objects
}

pub fn analyse(image: &Image) -> Analysis {
    let (functions, primaries) = group_functions(image);
    let objects = data_objects(image);
    let code_ranges = primaries
        .iter()
        .map(|(p, index)| CodeRange { address: p.address, end: p.address.wrapping_add(p.size), token: reference_name(&p.raw), parent: *index })
        .collect();
    let data_ranges = objects.iter().map(|o| DataRange { address: o.symbol.address, end: o.symbol.address.wrapping_add(o.symbol.size), token: o.token.clone() }).collect();
    let mut resolver = Resolver::new(image, code_ranges, data_ranges);
    let mut fields = Vec::new();
    let records: Vec<FunctionRecord> = functions.iter().enumerate().map(|(index, f)| function_record(image, &mut resolver, index, f, &mut fields)).collect();
    let relocated: Vec<u64> = image.relocations.keys().copied().collect();
    let object_records: Vec<ObjectRecord> = objects.iter().map(|o| object_record(image, &mut resolver, &o.symbol, &relocated)).collect();
    Analysis { functions: functions.into_iter().zip(records).collect(), objects: objects.into_iter().zip(object_records).collect() }
}

fn function_record(image: &Image, resolver: &mut Resolver, index: usize, function: &Function, fields: &mut Vec<crate::scan::AddressField>) -> FunctionRecord {
    let mut references = References::default();
    let mut part_digests: Vec<(String, [u8; 16])> = Vec::new();
    let mut instructions = 0;
    for part in &function.parts {
        let code = image.read(part.address, part.size);
        let current = CodeRange { address: part.address, end: part.address.wrapping_add(code.len() as u64), token: reference_name(&part.raw), parent: index };
        fields.clear();
        instructions += scan(&code, part.address, resolver.absolute_range, fields);
        let mut digest = Blake2b128::new();
        let mut position = 0;
        for field in fields.iter() {
            let token = resolver.token(field, &current, &mut references);
            let Some(token) = token else { continue };
            if field.start < position {
                continue;
            }
            digest.update(slice(&code, position, field.start));
            digest.update(b"\0");
            digest.update(token.as_bytes());
            digest.update(b"\0");
            position = field.end;
        }
        digest.update(slice(&code, position, code.len()));
        part_digests.push((part_kind(&part.raw), digest.finalize().into()));
    }
    part_digests.sort();
    let mut combined = Blake2b128::new();
    for (kind, part_digest) in &part_digests {
        combined.update(kind.as_bytes());
        combined.update(b"\0");
        combined.update(part_digest);
    }
    let primary = function.parts.iter().min_by_key(|p| (!part_kind(&p.raw).is_empty(), p.address)).unwrap();
    let mut parts: Vec<String> = function.parts.iter().map(|p| p.raw.clone()).collect();
    parts.sort();
    let (mut callee_functions, mut callee_stubs) = (Vec::new(), Vec::new());
    for callee in references.callees {
        match callee {
            Callee::Function(other) if other != index => callee_functions.push(other),
            Callee::Function(_) => {}
            Callee::Stub(name) => callee_stubs.push(name),
        }
    }
    FunctionRecord {
        raw: parent_symbol(&primary.raw),
        parts,
        address: primary.address,
        size: function.parts.iter().map(|p| p.size).sum(),
        instructions,
        fingerprint: hex(&combined.finalize()),
        callee_functions,
        callee_stubs,
        data_refs: references.data.into_iter().collect(),
        has_cold_part: function.parts.iter().any(|p| is_cold_part(&p.raw)),
    }
}

fn object_record(image: &Image, resolver: &mut Resolver, symbol: &Symbol, relocated: &[u64]) -> ObjectRecord {
    let section = image.section_at(symbol.address).expect("objects are inside a section");
    let fingerprint = object_fingerprint(image, resolver, symbol, section, relocated);
    ObjectRecord { section: section.name.clone(), writable: section.writable(), fingerprint }
}

/// An object's bytes hashed with each pointer replaced by what it points to.
fn object_fingerprint(image: &Image, resolver: &mut Resolver, symbol: &Symbol, section: &Section, relocated: &[u64]) -> String {
    if section.nobits {
        return hex(&Blake2b128::digest(format!("zero:{}", symbol.size).as_bytes()));
    }
    let contents = image.read(symbol.address, symbol.size);
    let end = symbol.address.wrapping_add(symbol.size);
    let mut pointers: Vec<(usize, String)> = Vec::new();
    if image.position_independent {
        let first = relocated.partition_point(|&slot| slot < symbol.address);
        let last = relocated.partition_point(|&slot| slot < end);
        for slot in &relocated[first..last.max(first)] {
            let relocation = &image.relocations[slot];
            let token = if relocation.kind == R_X86_64_RELATIVE { resolver.pointer_token(relocation.addend as u64) } else { relocation.symbol.clone() };
            pointers.push(((slot - symbol.address) as usize, token));
        }
    } else if let Some((low, high)) = resolver.absolute_range {
        let mut offset = 0;
        while offset + 8 <= contents.len() {
            let value = u64::from_le_bytes(contents[offset..offset + 8].try_into().unwrap());
            if low <= value && value < high {
                pointers.push((offset, resolver.pointer_token(value)));
            }
            offset += 8;
        }
    }
    if pointers.is_empty() {
        if symbol.raw.starts_with("_ZTS") {
            return hex(&Blake2b128::digest(unversioned_type_name(&contents)));
        }
        return hex(&Blake2b128::digest(&contents));
    }
    let mut digest = Blake2b128::new();
    let mut position = 0;
    for (offset, token) in pointers {
        digest.update(slice(&contents, position, offset));
        digest.update(b"\0");
        digest.update(token.as_bytes());
        digest.update(b"\0");
        position = offset + 8;
    }
    digest.update(slice(&contents, position, contents.len()));
    hex(&digest.finalize())
}

/// A typeinfo name (`_ZTS...`: the type's mangled name as a string) without the version of a
/// versioned namespace, `_unversioned_type_name` of `collectors/python_analysis.py`.
fn unversioned_type_name(contents: &[u8]) -> Vec<u8> {
    let end = contents.iter().position(|&b| b == 0).unwrap_or(contents.len());
    let Ok(name) = std::str::from_utf8(&contents[..end]) else { return contents.to_vec() };
    if !name.is_ascii() {
        return contents.to_vec();
    }
    let dropped = unversioned(&format!("_Z{name}"));
    if &dropped[2..] == name {
        return contents.to_vec();
    }
    let mut out = dropped.as_bytes()[2..].to_vec();
    out.extend_from_slice(&contents[end..]);
    out
}

/// `bytes[start:end]` with Python's clamping.
fn slice(bytes: &[u8], start: usize, end: usize) -> &[u8] {
    let end = end.min(bytes.len());
    &bytes[start.min(end)..end]
}
