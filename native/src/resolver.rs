//! Addresses turned into tokens that survive relinking, as `collectors/address_resolver.py`:
//! a function or object name plus offset, `name@plt` / `name@got`, a string literal's
//! text, a constant's bytes, a jump table's function offsets, or a section's name.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::elf::{hex, Image, R_X86_64_RELATIVE};
use crate::scan::{AddressField, BRANCH, INDEXED_TABLE, MEMORY};

const MAX_STRING: u64 = 512;
const MAX_TABLE_ENTRIES: u64 = 4096;
const TABLE_CHUNK: u64 = 32;

/// Ends a run of characters that may be a source file's path inside a string literal.
const PATH_DELIMITERS: &str = " \t\n\r\"'(),;:=<>[]{}";
const SOURCE_EXTENSIONS: [&str; 27] = [
    "c", "cc", "cp", "cpp", "cxx", "c++", "C", "h", "hh", "hpp", "hxx", "h++", "H", "inl", "inc", "ipp", "tcc", "tpp", "ixx",
    "cppm", "m", "mm", "s", "S", "asm", "cu", "cuh",
];

/// `text` with each source file's path in it cut to the file's name, as
/// `collectors/address_resolver.py`'s `without_source_directories`: `__FILE__` strings and
/// assert messages name the build's directory, which is not the code's.
pub fn without_source_directories(text: &str) -> String {
    if !text.contains('/') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let name = run.rsplit('/').next().unwrap_or("");
        let is_path = run.contains('/')
            && name.rfind('.').is_some_and(|dot| dot > 0 && SOURCE_EXTENSIONS.contains(&&name[dot + 1..]));
        out.push_str(if is_path { name } else { run.as_str() });
        run.clear();
    };
    for character in text.chars() {
        if PATH_DELIMITERS.contains(character) {
            flush(&mut run, &mut out);
            out.push(character);
        } else {
            run.push(character);
        }
    }
    flush(&mut run, &mut out);
    out
}

pub struct CodeRange {
    pub address: u64,
    pub end: u64,
    pub token: String,
    pub parent: usize, // index of the function it belongs to
}

pub struct DataRange {
    pub address: u64,
    pub end: u64,
    pub token: String,
}

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Callee {
    Function(usize),
    Stub(String),
}

/// What a function's code refers to, collected while fingerprinting.
#[derive(Default)]
pub struct References {
    pub callees: HashSet<Callee>,
    pub data: HashSet<usize>,
}

struct Resolved {
    token: String,
    callee: Option<Callee>,
    data: Option<usize>,
    may_be_table: bool,
}

pub struct Resolver<'i, 'a> {
    image: &'i Image<'a>,
    code: Vec<CodeRange>, // sorted by address
    code_starts: Vec<u64>,
    data: Vec<DataRange>, // sorted by address; data references are indices into it
    data_starts: Vec<u64>,
    data_by_token: HashMap<String, usize>,
    plt_starts: Vec<u64>,
    plt_names: Vec<String>,
    cache: HashMap<(u64, u8, usize), Rc<Resolved>>,
    pub absolute_range: Option<(u64, u64)>,
}

impl<'i, 'a> Resolver<'i, 'a> {
    pub fn new(image: &'i Image<'a>, mut code: Vec<CodeRange>, data: Vec<DataRange>) -> Self {
        code.sort_by_key(|r| r.address);
        let mut data_by_token = HashMap::new();
        for (index, range) in data.iter().enumerate() {
            data_by_token.insert(range.token.clone(), index); // the last of a token wins, as in Python
        }
        let absolute_range = (!image.position_independent).then(|| {
            let low = image.sections.iter().map(|s| s.address).min().unwrap_or(0);
            let high = image.sections.iter().map(|s| s.end()).max().unwrap_or(0);
            (low, high)
        });
        Resolver {
            image,
            code_starts: code.iter().map(|r| r.address).collect(),
            code,
            data_starts: data.iter().map(|r| r.address).collect(),
            data,
            data_by_token,
            plt_starts: image.plt_names.keys().copied().collect(),
            plt_names: image.plt_names.values().cloned().collect(),
            cache: HashMap::new(),
            absolute_range,
        }
    }

    fn code_at(&self, address: u64) -> Option<&CodeRange> {
        let index = self.code_starts.partition_point(|&s| s <= address).checked_sub(1)?;
        let range = &self.code[index];
        (address < range.end).then_some(range)
    }

    fn data_at(&self, address: u64) -> Option<usize> {
        let index = self.data_starts.partition_point(|&s| s <= address).checked_sub(1)?;
        (address < self.data[index].end).then_some(index)
    }

    /// The PLT stub whose indirect jump is at or just after `address`.
    fn plt_at(&self, address: u64) -> Option<&str> {
        let index = self.plt_starts.partition_point(|&s| s < address);
        let start = *self.plt_starts.get(index)?;
        (start - address < 16).then(|| self.plt_names[index].as_str())
    }

    /// The token for an address field of `current`'s code; None keeps the raw bytes.
    pub fn token(&mut self, field: &AddressField, current: &CodeRange, references: &mut References) -> Option<String> {
        let target = field.target;
        if current.address <= target && target < current.end {
            // Relative references inside the function move with it; absolute ones do not.
            return if field.kind == BRANCH || field.kind == MEMORY { None } else { Some(format!("self+{}", target - current.address)) };
        }
        let resolved = self.cached(target, field.kind, field.size);
        if resolved.may_be_table {
            if let Some(table) = self.jump_table(target, field.kind, current) {
                return Some(table);
            }
        }
        if let Some(callee) = &resolved.callee {
            if *callee != Callee::Function(current.parent) {
                references.callees.insert(callee.clone());
            }
        }
        if let Some(data) = resolved.data {
            references.data.insert(data);
        }
        Some(resolved.token.clone())
    }

    /// The token for a pointer stored in data.
    pub fn pointer_token(&mut self, target: u64) -> String {
        self.cached(target, MEMORY, 0).token.clone()
    }

    fn cached(&mut self, target: u64, kind: u8, size: usize) -> Rc<Resolved> {
        if let Some(resolved) = self.cache.get(&(target, kind, size)) {
            return resolved.clone();
        }
        let resolved = Rc::new(self.resolve(target, kind, size, true));
        self.cache.insert((target, kind, size), resolved.clone());
        resolved
    }

    fn resolve(&self, target: u64, kind: u8, size: usize, through_slot: bool) -> Resolved {
        let plain = |token: String| Resolved { token, callee: None, data: None, may_be_table: false };
        if let Some(code) = self.code_at(target) {
            let offset = target - code.address;
            let token = if offset != 0 { format!("fn:{}+{offset}", code.token) } else { format!("fn:{}", code.token) };
            return Resolved { token, callee: Some(Callee::Function(code.parent)), data: None, may_be_table: false };
        }
        if let Some(index) = self.data_at(target) {
            let data = &self.data[index];
            let offset = target - data.address;
            let token = if offset != 0 { format!("obj:{}+{offset}", data.token) } else { format!("obj:{}", data.token) };
            return Resolved { token, callee: None, data: Some(index), may_be_table: false };
        }
        if kind == BRANCH {
            if let Some(stub) = self.plt_at(target) {
                return Resolved { token: stub.to_string(), callee: Some(Callee::Stub(stub.to_string())), data: None, may_be_table: false };
            }
        }
        if let Some(slot) = self.image.got_names.get(&target) {
            let name = slot.strip_suffix("@got").unwrap_or(slot);
            if let Some(&index) = self.data_by_token.get(name) {
                return Resolved { token: slot.clone(), callee: None, data: Some(index), may_be_table: false };
            }
            return Resolved { token: slot.clone(), callee: Some(Callee::Stub(format!("{name}@plt"))), data: None, may_be_table: false };
        }
        if let Some(relocation) = self.image.relocations.get(&target) {
            if relocation.kind == R_X86_64_RELATIVE && through_slot {
                // A GOT slot filled at load time with a local address: name what it holds.
                let inner = self.resolve(relocation.addend as u64, MEMORY, 0, false);
                return Resolved { token: format!("got:{}", inner.token), callee: inner.callee, data: inner.data, may_be_table: false };
            }
        }
        let Some(section) = self.image.section_at(target) else { return plain("outside".into()) };
        if section.writable() {
            return plain(format!("sec:{}", section.name));
        }
        let may_be_table = (kind == MEMORY || kind == INDEXED_TABLE) && matches!(size, 0 | 4 | 8);
        // A value read with a size whose first byte is 0 (a double such as 2.5) is that value, not an empty string.
        let token = if let Some(text) = self.c_string(target).filter(|text| !text.is_empty() || size == 0) {
            format!("str:{}", without_source_directories(&text))
        } else if size != 0 {
            format!("const:{}:{}", section.name, hex(&self.image.read(target, size as u64)))
        } else {
            format!("sec:{}", section.name)
        };
        Resolved { token, callee: None, data: None, may_be_table }
    }

    /// Offsets into `current`'s function listed by a jump table at `table`, if it is one;
    /// entries are read while they land in the function (a table has no recorded length).
    fn jump_table(&self, table: u64, kind: u8, current: &CodeRange) -> Option<String> {
        let (width, base): (u64, i128) = if kind == INDEXED_TABLE { (8, 0) } else { (4, table as i128) };
        let mut entries: Vec<String> = Vec::new();
        let finish = |entries: Vec<String>| (!entries.is_empty()).then(|| format!("jt:{}", entries.join(",")));
        let mut chunk_start = 0;
        while chunk_start < MAX_TABLE_ENTRIES * width {
            let raw = self.image.read(table.wrapping_add(chunk_start), TABLE_CHUNK * width);
            for entry in raw.chunks_exact(width as usize) {
                let value = if width == 8 { i64::from_le_bytes(entry.try_into().unwrap()) as i128 } else { i32::from_le_bytes(entry.try_into().unwrap()) as i128 };
                let target = base + value;
                if (current.address as i128) <= target && target < current.end as i128 {
                    entries.push(format!("{}+{}", current.token, target - current.address as i128));
                    continue;
                }
                let code = u64::try_from(target).ok().and_then(|t| self.code_at(t));
                match code {
                    Some(code) if code.parent == current.parent => {
                        entries.push(format!("{}+{}", code.token, target - code.address as i128))
                    }
                    _ => return finish(entries),
                }
            }
            if (raw.len() as u64) < TABLE_CHUNK * width {
                break;
            }
            chunk_start += TABLE_CHUNK * width;
        }
        finish(entries)
    }

    fn c_string(&self, address: u64) -> Option<String> {
        let raw = self.image.read(address, MAX_STRING);
        let end = raw.iter().position(|&b| b == 0)?;
        let printable = raw[..end].iter().all(|&b| (0x20..0x7F).contains(&b) || matches!(b, 0x09 | 0x0A | 0x0D));
        printable.then(|| String::from_utf8_lossy(&raw[..end]).into_owned())
    }
}
