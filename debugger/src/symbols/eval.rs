//! Evaluating DWARF location descriptions against a stopped frame.

use gimli::{AttributeValue, EvaluationResult, Location};

use super::{FrameContext, R};
use crate::error::{Error, Result};

/// Where a variable's bytes are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Place {
    Memory(u64),
    Register(u16),
    /// The value itself (DW_OP_stack_value, implicit values, pieces).
    Bytes(Vec<u8>),
    /// An object assembled from pieces some of which are optimized out:
    /// its bytes, and per byte a mask of the bits that are known.
    Pieces {
        bytes: Vec<u8>,
        known: Vec<u8>,
    },
    OptimizedOut,
    Unavailable(String),
    /// At this offset in the object's TLS block of the frame's thread.
    ThreadLocal(u64),
    /// A pointer optimized away whose target is known
    /// (DW_OP_implicit_pointer): the target variable's DIE and the byte
    /// offset into it.
    ImplicitPointer {
        die: gimli::DebugInfoOffset,
        offset: i64,
    },
}

/// The bytes of one register as DWARF sees it (little endian, 8 bytes).
fn register_bytes(frame: &dyn FrameContext, regno: u16) -> Option<Vec<u8>> {
    frame.register(regno).map(|v| v.to_le_bytes().to_vec())
}

/// The expression of a location attribute that applies at `pc` (a file
/// address): an exprloc directly, or the matching location-list entry.
pub(crate) fn expression_at(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    attr: &AttributeValue<R>,
    pc: Option<u64>,
) -> Result<Option<gimli::Expression<R>>> {
    if let AttributeValue::Exprloc(expr) = attr {
        return Ok(Some(*expr));
    }
    let Some(mut list) = dwarf
        .attr_locations(unit, *attr)
        .map_err(super::dwarf::dwarf_error)?
    else {
        return Ok(None);
    };
    let Some(pc) = pc else { return Ok(None) };
    while let Some(entry) = list.next().map_err(super::dwarf::dwarf_error)? {
        if pc >= entry.range.begin && pc < entry.range.end {
            return Ok(Some(entry.data));
        }
    }
    Ok(None)
}

/// Everything an evaluation may ask for.
pub(crate) struct EvalContext<'a> {
    pub(crate) dwarf: &'a gimli::Dwarf<R>,
    pub(crate) unit: &'a gimli::Unit<R>,
    pub(crate) frame: &'a dyn FrameContext,
    /// DW_AT_frame_base of the enclosing subprogram.
    pub(crate) frame_base: Option<&'a AttributeValue<R>>,
}

impl EvalContext<'_> {
    /// The current pc of the frame as a file address.
    pub(crate) fn pc(&self) -> Option<u64> {
        self.frame
            .register(16)
            .map(|rip| rip.wrapping_sub(self.frame.load_bias()))
    }

    /// Evaluate a location attribute to a place.
    pub(crate) fn place_of(&self, attr: &AttributeValue<R>) -> Result<Place> {
        match expression_at(self.dwarf, self.unit, attr, self.pc())? {
            Some(expr) => self.evaluate(expr, false),
            None => Ok(Place::OptimizedOut),
        }
    }

    fn frame_base_value(&self) -> Result<u64> {
        let attr = self
            .frame_base
            .ok_or_else(|| Error::Dwarf("variable needs a frame base, but none".into()))?;
        let expr = expression_at(self.dwarf, self.unit, attr, self.pc())?
            .ok_or_else(|| Error::Dwarf("no frame base at this pc".into()))?;
        match self.evaluate(expr, true)? {
            Place::Memory(addr) => Ok(addr),
            Place::Register(r) => self
                .frame
                .register(r)
                .ok_or_else(|| Error::Dwarf(format!("register {r} unavailable"))),
            _ => Err(Error::Dwarf("unsupported frame base".into())),
        }
    }

    fn evaluate(&self, expr: gimli::Expression<R>, is_frame_base: bool) -> Result<Place> {
        let err = super::dwarf::dwarf_error;
        let mut eval = expr.evaluation(self.unit.encoding());
        let mut state = eval.evaluate().map_err(err)?;
        loop {
            state = match state {
                EvaluationResult::Complete => break,
                EvaluationResult::RequiresMemory { address, size, .. } => {
                    let mut buf = [0u8; 8];
                    let n = usize::from(size).min(8);
                    self.frame.read_memory(address, &mut buf[..n])?;
                    let v = u64::from_le_bytes(buf);
                    eval.resume_with_memory(gimli::Value::Generic(v))
                        .map_err(err)?
                }
                EvaluationResult::RequiresRegister { register, .. } => {
                    let Some(v) = self.frame.register(register.0) else {
                        return Ok(Place::Unavailable("register unavailable".into()));
                    };
                    eval.resume_with_register(gimli::Value::Generic(v))
                        .map_err(err)?
                }
                EvaluationResult::RequiresFrameBase if !is_frame_base => {
                    let base = self.frame_base_value()?;
                    eval.resume_with_frame_base(base).map_err(err)?
                }
                EvaluationResult::RequiresCallFrameCfa => {
                    let Some(cfa) = self.frame.cfa() else {
                        return Ok(Place::Unavailable("frame address unknown".into()));
                    };
                    eval.resume_with_call_frame_cfa(cfa).map_err(err)?
                }
                EvaluationResult::RequiresRelocatedAddress(addr) => eval
                    .resume_with_relocated_address(addr.wrapping_add(self.frame.load_bias()))
                    .map_err(err)?,
                EvaluationResult::RequiresIndexedAddress { index, relocate } => {
                    let addr = self.dwarf.address(self.unit, index).map_err(err)?;
                    let bias = if relocate { self.frame.load_bias() } else { 0 };
                    eval.resume_with_indexed_address(addr.wrapping_add(bias))
                        .map_err(err)?
                }
                // A register's value at function entry: what the caller's
                // call site says it passed, else gone.
                EvaluationResult::RequiresEntryValue(expr) => {
                    let Some(register) = entry_register(expr) else {
                        return Ok(Place::OptimizedOut);
                    };
                    let value = match self.frame.entry_value(register) {
                        Ok(Some(value)) => value,
                        Ok(None) => return Ok(Place::OptimizedOut),
                        Err(why) => return Ok(Place::Unavailable(why)),
                    };
                    eval.resume_with_entry_value(gimli::Value::Generic(value))
                        .map_err(err)?
                }
                // DW_OP_convert, DW_OP_regval_type...: the operation's type.
                EvaluationResult::RequiresBaseType(offset) => {
                    let Some(value_type) = base_type(self.unit, offset) else {
                        return Ok(Place::Unavailable("unknown base type".into()));
                    };
                    eval.resume_with_base_type(value_type).map_err(err)?
                }
                // gcc ends the expression with the TLS operation: the
                // offset is all there is to know here; the object file
                // knows where its block is.
                EvaluationResult::RequiresTls(offset) => return Ok(Place::ThreadLocal(offset)),
                other => {
                    return Ok(Place::Unavailable(format!(
                        "unsupported DWARF expression ({other:?})"
                    )))
                }
            };
        }
        self.assemble(eval.result())
    }

    /// One piece gives its place; several are assembled bit by bit into
    /// the object's bytes, with a mask of the bits that are known.
    fn assemble(&self, pieces: Vec<gimli::Piece<R>>) -> Result<Place> {
        if pieces.len() == 1 && pieces[0].size_in_bits.is_none() {
            return self.piece_place(&pieces[0].location);
        }
        let mut object = PieceBuffer::default();
        for piece in &pieces {
            let size_bits = piece.size_in_bits.unwrap_or(64).min(MAX_PIECE_BITS);
            let offset_bits = piece.bit_offset.unwrap_or(0).min(MAX_PIECE_BITS);
            let source =
                self.piece_bytes(&piece.location, (offset_bits + size_bits).div_ceil(8))?;
            object.push(source.as_deref(), offset_bits, size_bits);
        }
        Ok(object.into_place())
    }

    /// The bytes a piece's location holds (`len` of them from memory), or
    /// `None` when they are optimized out or cannot be read.
    fn piece_bytes(&self, location: &Location<R>, len: u64) -> Result<Option<Vec<u8>>> {
        Ok(match self.piece_place(location)? {
            Place::Memory(addr) => {
                let mut buf = vec![0; usize::try_from(len).unwrap_or(0)];
                self.frame.read_memory(addr, &mut buf).ok().map(|()| buf)
            }
            Place::Register(r) => register_bytes(self.frame, r),
            Place::Bytes(b) => Some(b),
            _ => None,
        })
    }

    fn piece_place(&self, location: &Location<R>) -> Result<Place> {
        Ok(match location {
            Location::Empty => Place::OptimizedOut,
            Location::Register { register } => Place::Register(register.0),
            Location::Address { address } => Place::Memory(*address),
            Location::Value { value } => Place::Bytes(value_bytes(*value)),
            Location::Bytes { value } => Place::Bytes(value.slice().to_vec()),
            Location::ImplicitPointer { value, byte_offset } => Place::ImplicitPointer {
                die: *value,
                offset: *byte_offset,
            },
        })
    }
}

/// The value type a DW_TAG_base_type describes (its encoding and size).
fn base_type(unit: &gimli::Unit<R>, offset: gimli::UnitOffset) -> Option<gimli::ValueType> {
    // Offset 0 is the generic type (an address-sized integer).
    if offset.0 == 0 {
        return Some(gimli::ValueType::Generic);
    }
    let entry = unit.entry(offset).ok()?;
    let encoding = match entry.attr_value(gimli::DW_AT_encoding).ok()?? {
        AttributeValue::Encoding(e) => e,
        _ => return None,
    };
    let size = entry
        .attr_value(gimli::DW_AT_byte_size)
        .ok()??
        .udata_value()?;
    gimli::ValueType::from_encoding(encoding, size)
}

/// The register of a DW_OP_entry_value operand that is just `DW_OP_regN`
/// or `DW_OP_regx N` (what gcc emits for parameters).
pub(crate) fn entry_register(expr: gimli::Expression<R>) -> Option<u16> {
    let mut reader = expr.0;
    let op = gimli::Reader::read_u8(&mut reader).ok()?;
    let regno = match op {
        0x50..=0x6f => u16::from(op - 0x50),
        0x90 => u16::try_from(gimli::Reader::read_uleb128(&mut reader).ok()?).ok()?,
        _ => return None,
    };
    gimli::Reader::is_empty(&reader).then_some(regno)
}

/// Pieces larger than this (a megabyte) are clipped: no real object is.
const MAX_PIECE_BITS: u64 = 8 << 20;

/// An object being assembled from pieces, bit by bit.
#[derive(Default)]
struct PieceBuffer {
    bytes: Vec<u8>,
    known: Vec<u8>,
    bits: u64,
}

impl PieceBuffer {
    /// Append `size` bits of `source` starting at bit `offset`; unknown
    /// when there is no source or it is too short.
    fn push(&mut self, source: Option<&[u8]>, offset: u64, size: u64) {
        for i in 0..size {
            let bit = source.and_then(|s| {
                let at = offset + i;
                let byte = s.get(usize::try_from(at / 8).ok()?)?;
                Some(byte >> (at % 8) & 1)
            });
            let at = self.bits + i;
            let index = (at / 8) as usize;
            if index >= self.bytes.len() {
                self.bytes.push(0);
                self.known.push(0);
            }
            if let Some(bit) = bit {
                self.bytes[index] |= bit << (at % 8);
                self.known[index] |= 1 << (at % 8);
            }
        }
        self.bits += size;
    }

    fn into_place(self) -> Place {
        if self.known.iter().all(|k| *k == 0xff) {
            Place::Bytes(self.bytes)
        } else if self.known.iter().all(|k| *k == 0) {
            Place::OptimizedOut
        } else {
            Place::Pieces {
                bytes: self.bytes,
                known: self.known,
            }
        }
    }
}

fn value_bytes(value: gimli::Value) -> Vec<u8> {
    use gimli::Value as V;
    match value {
        V::Generic(v) | V::U64(v) => v.to_le_bytes().to_vec(),
        V::I8(v) => v.to_le_bytes().to_vec(),
        V::U8(v) => v.to_le_bytes().to_vec(),
        V::I16(v) => v.to_le_bytes().to_vec(),
        V::U16(v) => v.to_le_bytes().to_vec(),
        V::I32(v) => v.to_le_bytes().to_vec(),
        V::U32(v) => v.to_le_bytes().to_vec(),
        V::I64(v) => v.to_le_bytes().to_vec(),
        V::F32(v) => v.to_le_bytes().to_vec(),
        V::F64(v) => v.to_le_bytes().to_vec(),
    }
}

/// What a place holds: its bytes (`size` of them) and, when some of
/// them are optimized out, per byte the mask of the bits that are known.
pub(crate) struct PlaceContents {
    pub(crate) bytes: Vec<u8>,
    pub(crate) known: Option<Vec<u8>>,
}

/// The bytes a place holds, `size` of them.
pub(crate) fn read_place(
    place: &Place,
    size: usize,
    frame: &dyn FrameContext,
) -> Result<std::result::Result<PlaceContents, crate::value::Value>> {
    use crate::value::Value;
    let bytes = match place {
        Place::Memory(addr) => {
            let mut buf = vec![0; size];
            frame.read_memory(*addr, &mut buf)?;
            buf
        }
        Place::Register(r) => match register_bytes(frame, *r) {
            Some(mut b) => {
                b.resize(size.max(8), 0);
                b.truncate(size);
                b
            }
            None => return Ok(Err(Value::Unavailable("register unavailable".into()))),
        },
        Place::Bytes(b) => {
            let mut b = b.clone();
            b.resize(size, 0);
            b
        }
        Place::Pieces { bytes, known } => {
            let (mut bytes, mut known) = (bytes.clone(), known.clone());
            bytes.resize(size, 0);
            known.resize(size, 0);
            return Ok(Ok(PlaceContents {
                bytes,
                known: Some(known),
            }));
        }
        Place::OptimizedOut => return Ok(Err(Value::OptimizedOut)),
        Place::Unavailable(why) => return Ok(Err(Value::Unavailable(why.clone()))),
        Place::ThreadLocal(_) => return Ok(Err(Value::Unavailable("thread-local storage".into()))),
        Place::ImplicitPointer { .. } => {
            return Ok(Err(Value::Unavailable("synthetic pointer".into())))
        }
    };
    Ok(Ok(PlaceContents { bytes, known: None }))
}

#[cfg(test)]
mod tests {
    use super::{PieceBuffer, Place};

    #[test]
    fn pieces_assemble_bits_and_mark_the_missing_ones() {
        // struct ops at -O2: 8 bytes optimized out, then bit pieces of
        // 1, 3 and 4 bits from stack values, then 7 bytes out.
        let mut object = PieceBuffer::default();
        object.push(None, 0, 64);
        object.push(Some(&[1]), 0, 1);
        object.push(Some(&(-3i64).to_le_bytes()), 0, 3);
        object.push(Some(&[9]), 0, 4);
        object.push(None, 0, 56);
        let Place::Pieces { bytes, known } = object.into_place() else {
            panic!("expected pieces");
        };
        assert_eq!(bytes.len(), 16);
        assert_eq!(known[..9], [0, 0, 0, 0, 0, 0, 0, 0, 0xff]);
        // mode 9 in bits 4..8, level -3 (0b101) in bits 1..4, ready in bit 0.
        assert_eq!(bytes[8], 0b1001_1011);
        assert!(known[9..].iter().all(|k| *k == 0));
    }

    #[test]
    fn whole_pieces_are_plain_bytes_and_empty_ones_optimized_out() {
        let mut object = PieceBuffer::default();
        object.push(Some(&[1, 0, 0, 0]), 0, 32);
        object.push(Some(&[0x34, 0x12]), 8, 8);
        assert_eq!(object.into_place(), Place::Bytes(vec![1, 0, 0, 0, 0x12]));
        let mut gone = PieceBuffer::default();
        gone.push(None, 0, 32);
        assert_eq!(gone.into_place(), Place::OptimizedOut);
    }
}
