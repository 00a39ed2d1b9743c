//! The ELF file as `collectors/elf_image.py` loads it: allocated sections sorted by
//! address, function and object symbols, dynamic relocations, PLT and GOT names.
//!
//! The `object` crate reads the headers and the section table; symbol and relocation
//! records are fixed 24-byte layouts read in place.  Anything unexpected is an `Err`:
//! the Python caller then runs its own loader, which names the problem precisely.

use std::collections::{BTreeMap, HashMap};

use blake2::{digest::consts::U16, Blake2b, Digest};
use object::elf::{FileHeader64, EM_X86_64, ET_DYN, ET_EXEC, SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, SHT_NOBITS, SHT_NULL, SHT_RELA};
use object::read::elf::{FileHeader, SectionHeader};
use object::LittleEndian as LE;

use crate::scan::plt_stub_slots;

pub type Blake2b128 = Blake2b<U16>;

pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
const STT_FILE: u8 = 4;
const STT_GNU_IFUNC: u8 = 10;
const R_X86_64_64: u32 = 1;
const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;
pub const R_X86_64_RELATIVE: u32 = 8;
const RECORD: usize = 24; // Elf64_Sym and Elf64_Rela are both 24 bytes

#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub address: u64,
    pub size: u64,
    pub offset: u64,
    pub flags: u64,
    pub nobits: bool,
}

impl Section {
    pub fn end(&self) -> u64 {
        self.address.wrapping_add(self.size)
    }
    pub fn executable(&self) -> bool {
        self.flags & SHF_EXECINSTR as u64 != 0
    }
    pub fn writable(&self) -> bool {
        self.flags & SHF_WRITE as u64 != 0
    }
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub raw: String,
    pub address: u64,
    pub size: u64,
    pub kind: u8, // STT_FUNC or STT_OBJECT
    pub local: bool,
    pub file: String,
}

pub struct Relocation {
    pub kind: u32,
    pub symbol: String,
    pub addend: i64,
}

pub struct Image<'a> {
    pub data: &'a [u8],
    pub position_independent: bool,
    pub sections: Vec<Section>, // allocated, non-empty, sorted by address
    section_starts: Vec<u64>,
    pub symbols: Vec<Symbol>,
    pub symbol_source: &'static str,
    pub relocations: BTreeMap<u64, Relocation>,
    pub plt_names: BTreeMap<u64, String>,
    pub got_names: HashMap<u64, String>,
}

pub type Result<T> = std::result::Result<T, String>;

impl<'a> Image<'a> {
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        let header = FileHeader64::<LE>::parse(data).map_err(|e| e.to_string())?;
        if header.e_machine(LE) != EM_X86_64 {
            return Err("not an x86-64 ELF file".into());
        }
        let file_type = header.e_type(LE);
        if file_type != ET_EXEC && file_type != ET_DYN {
            return Err("not a linked executable or shared library".into());
        }
        let table = header.sections(LE, data).map_err(|e| e.to_string())?;
        let mut all = Vec::new();
        for section in table.iter() {
            let name = String::from_utf8_lossy(table.section_name(LE, section).map_err(|e| e.to_string())?).into_owned();
            let nobits = section.sh_type(LE) == SHT_NOBITS;
            let (offset, size) = (section.sh_offset(LE), section.sh_size(LE));
            if !nobits && section.sh_type(LE) != SHT_NULL && offset.checked_add(size).map_or(true, |end| end > data.len() as u64) {
                return Err(format!("section {name} ends past the end of the file"));
            }
            all.push((section.sh_type(LE), Section { name, address: section.sh_addr(LE), size, offset, flags: section.sh_flags(LE), nobits }));
        }
        let mut sections: Vec<Section> =
            all.iter().map(|(_, s)| s.clone()).filter(|s| s.flags & SHF_ALLOC as u64 != 0 && s.size != 0).collect();
        sections.sort_by_key(|s| s.address); // stable, as Python's sorted()
        let mut image = Image {
            data,
            position_independent: file_type == ET_DYN,
            section_starts: sections.iter().map(|s| s.address).collect(),
            sections,
            symbols: Vec::new(),
            symbol_source: "symtab",
            relocations: BTreeMap::new(),
            plt_names: BTreeMap::new(),
            got_names: HashMap::new(),
        };
        // As Python's {s.name: s}: the last section of a name wins.
        let by_name: HashMap<&str, &Section> = all.iter().map(|(_, s)| (s.name.as_str(), s)).collect();
        image.load_symbols(&by_name)?;
        image.load_relocations(&all, &by_name)?;
        image.load_plt_names();
        Ok(image)
    }

    fn records(&self, section: &Section) -> Result<&'a [u8]> {
        let count = section.size as usize / RECORD;
        let start = section.offset as usize;
        self.data.get(start..start + count * RECORD).ok_or_else(|| format!("{} past the end of the file", section.name))
    }

    fn load_symbols(&mut self, by_name: &HashMap<&str, &Section>) -> Result<()> {
        let (table, strings) = if let Some(table) = by_name.get(".symtab") {
            let strings = by_name.get(".strtab").ok_or(".symtab has no .strtab string table")?;
            (*table, *strings)
        } else if let (Some(table), Some(strings)) = (by_name.get(".dynsym"), by_name.get(".dynstr")) {
            self.symbol_source = "dynsym";
            (*table, *strings)
        } else {
            return Ok(());
        };
        let records = self.records(table)?;
        let string_bytes = self.bytes_of(strings);
        let mut current_file = String::new();
        for record in records.chunks_exact(RECORD) {
            let info = record[4];
            let kind = info & 0xF;
            if !matches!(kind, STT_FUNC | STT_OBJECT | STT_FILE | STT_GNU_IFUNC) {
                continue;
            }
            let name = c_string(string_bytes, u32_at(record, 0) as usize);
            if kind == STT_FILE {
                current_file = name;
                continue;
            }
            let shndx = u16::from_le_bytes([record[6], record[7]]);
            if shndx == 0 || shndx >= 0xFF00 || name.is_empty() {
                continue; // undefined, absolute or common
            }
            let local = info >> 4 == 0;
            self.symbols.push(Symbol {
                raw: name,
                address: u64_at(record, 8),
                size: u64_at(record, 16),
                kind: if kind == STT_OBJECT { STT_OBJECT } else { STT_FUNC },
                local,
                file: if local { current_file.clone() } else { String::new() },
            });
        }
        Ok(())
    }

    fn load_relocations(&mut self, all: &[(u32, Section)], by_name: &HashMap<&str, &Section>) -> Result<()> {
        let mut dynamic_names = Vec::new();
        if let (Some(dynsym), Some(dynstr)) = (by_name.get(".dynsym"), by_name.get(".dynstr")) {
            let strings = self.bytes_of(dynstr);
            dynamic_names = self.records(dynsym)?.chunks_exact(RECORD).map(|r| c_string(strings, u32_at(r, 0) as usize)).collect();
        }
        for (kind, section) in all {
            if *kind != SHT_RELA || !matches!(section.name.as_str(), ".rela.dyn" | ".rela.plt" | ".rela.got") {
                continue;
            }
            let table = by_name[section.name.as_str()];
            for record in self.records(table)?.chunks_exact(RECORD) {
                let (slot, info, addend) = (u64_at(record, 0), u64_at(record, 8), u64_at(record, 16) as i64);
                let (kind, symbol) = ((info & 0xFFFF_FFFF) as u32, (info >> 32) as usize);
                let name = if symbol > 0 && symbol < dynamic_names.len() { dynamic_names[symbol].clone() } else { String::new() };
                if !name.is_empty() && matches!(kind, R_X86_64_GLOB_DAT | R_X86_64_JUMP_SLOT | R_X86_64_64) {
                    self.got_names.insert(slot, format!("{name}@got"));
                }
                self.relocations.insert(slot, Relocation { kind, symbol: name, addend });
            }
        }
        Ok(())
    }

    /// Each PLT stub is named by the GOT slot its indirect jump reads.
    fn load_plt_names(&mut self) {
        for section in self.sections.iter().filter(|s| s.name.starts_with(".plt")) {
            for (stub, slot) in plt_stub_slots(self.bytes_of(section), section.address) {
                if let Some(name) = self.got_names.get(&slot) {
                    self.plt_names.entry(stub).or_insert_with(|| name.replace("@got", "@plt"));
                }
            }
        }
    }

    /// A section's file bytes, clamped to the file as Python's slicing does.
    fn bytes_of(&self, section: &Section) -> &'a [u8] {
        let start = (section.offset as usize).min(self.data.len());
        let end = (section.offset.saturating_add(section.size) as usize).min(self.data.len());
        &self.data[start..end.max(start)]
    }

    pub fn section_at(&self, address: u64) -> Option<&Section> {
        let index = self.section_starts.partition_point(|&start| start <= address);
        let section = self.sections.get(index.checked_sub(1)?)?;
        (address < section.end()).then_some(section)
    }

    /// Bytes at a virtual address (zeros for .bss), short if the section ends first.
    pub fn read(&self, address: u64, size: u64) -> std::borrow::Cow<'a, [u8]> {
        let Some(section) = self.section_at(address) else { return std::borrow::Cow::Borrowed(&[]) };
        let size = size.min(section.end() - address) as usize;
        if section.nobits {
            return std::borrow::Cow::Owned(vec![0; size]);
        }
        let start = ((section.offset + (address - section.address)) as usize).min(self.data.len());
        let end = start.saturating_add(size).min(self.data.len());
        std::borrow::Cow::Borrowed(&self.data[start..end])
    }

    /// Digest of what runs: allocated sections but notes (the build id), as in Python.
    pub fn content_digest(&self) -> String {
        let mut digest = Blake2b128::new();
        for section in self.sections.iter().filter(|s| !s.name.starts_with(".note")) {
            digest.update(format!("{}:{}:{}\0", section.name, section.address, section.size).as_bytes());
            if !section.nobits {
                digest.update(self.bytes_of(section));
            }
        }
        hex(&digest.finalize())
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn u32_at(record: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(record[at..at + 4].try_into().unwrap())
}

fn u64_at(record: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(record[at..at + 8].try_into().unwrap())
}

fn c_string(table: &[u8], offset: usize) -> String {
    let Some(rest) = table.get(offset..) else { return String::new() };
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end]).into_owned()
}
