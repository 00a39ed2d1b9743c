//! Instruction scanning with iced-x86, as `collectors/decoder.py`'s `IcedDecoder`:
//! count instructions and list the address fields (the bytes that encode an address).

use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

pub const BRANCH: u8 = 0; // relative call / jump target
pub const MEMORY: u8 = 1; // RIP-relative memory operand
pub const IMMEDIATE: u8 = 2; // absolute immediate inside the image (fixed-address only)
pub const ABSOLUTE_MEMORY: u8 = 3; // absolute displacement without base register
pub const INDEXED_TABLE: u8 = 4; // absolute displacement with an index register

pub struct AddressField {
    pub start: usize,
    pub end: usize,
    pub target: u64,
    pub kind: u8,
    pub size: usize,
}

/// Count instructions of `code` (at `address`) and append its address fields.
/// Branches inside the scanned code are left out: they move with it.
pub fn scan(code: &[u8], address: u64, absolute: Option<(u64, u64)>, fields: &mut Vec<AddressField>) -> usize {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let end = address.wrapping_add(code.len() as u64);
    let mut instruction = Instruction::default();
    let mut count = 0;
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        count += 1;
        let offset = (instruction.ip() - address) as usize;
        let target = instruction.near_branch_target();
        if target != 0 {
            if address <= target && target < end {
                continue;
            }
            let offsets = decoder.get_constant_offsets(&instruction);
            let start = offset + offsets.immediate_offset();
            fields.push(AddressField { start, end: start + offsets.immediate_size(), target, kind: BRANCH, size: 0 });
        } else if instruction.is_ip_rel_memory_operand() {
            let offsets = decoder.get_constant_offsets(&instruction);
            let start = offset + offsets.displacement_offset();
            let size = if instruction.mnemonic() == Mnemonic::Lea { 0 } else { instruction.memory_size().size() };
            let target = instruction.ip_rel_memory_address();
            fields.push(AddressField { start, end: start + offsets.displacement_size(), target, kind: MEMORY, size });
        } else if let Some((low, high)) = absolute {
            absolute_fields(&decoder, &instruction, offset, low, high, fields);
        }
    }
    count
}

fn absolute_fields(decoder: &Decoder, instruction: &Instruction, offset: usize, low: u64, high: u64, fields: &mut Vec<AddressField>) {
    for operand in 0..instruction.op_count() {
        match instruction.op_kind(operand) {
            OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64 => {
                let value = instruction.immediate(operand);
                if low <= value && value < high {
                    let offsets = decoder.get_constant_offsets(instruction);
                    let start = offset + offsets.immediate_offset();
                    fields.push(AddressField { start, end: start + offsets.immediate_size(), target: value, kind: IMMEDIATE, size: 0 });
                }
            }
            OpKind::Memory if instruction.memory_base() == Register::None => {
                let value = instruction.memory_displacement64();
                if instruction.memory_displ_size() >= 4 && low <= value && value < high {
                    let offsets = decoder.get_constant_offsets(instruction);
                    let start = offset + offsets.displacement_offset();
                    let kind = if instruction.memory_index() != Register::None { INDEXED_TABLE } else { ABSOLUTE_MEMORY };
                    let size = instruction.memory_size().size();
                    fields.push(AddressField { start, end: start + offsets.displacement_size(), target: value, kind, size });
                }
            }
            _ => {}
        }
    }
}

/// (address of the stub's indirect jump, GOT slot it reads) for each PLT stub.
pub fn plt_stub_slots(code: &[u8], address: u64) -> Vec<(u64, u64)> {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let mut slots = Vec::new();
    let mut instruction = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        if instruction.is_jmp_near_indirect() && instruction.is_ip_rel_memory_operand() {
            slots.push((instruction.ip(), instruction.ip_rel_memory_address()));
        }
    }
    slots
}
