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
    OptimizedOut,
    Unavailable(String),
    /// At this offset in the object's TLS block of the frame's thread.
    ThreadLocal(u64),
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
                    let value = entry_register(expr).and_then(|r| self.frame.entry_value(r));
                    let Some(value) = value else {
                        return Ok(Place::OptimizedOut);
                    };
                    eval.resume_with_entry_value(gimli::Value::Generic(value))
                        .map_err(err)?
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

    /// One piece gives its place; several are concatenated into bytes.
    fn assemble(&self, pieces: Vec<gimli::Piece<R>>) -> Result<Place> {
        if pieces.len() == 1 && pieces[0].size_in_bits.is_none() {
            return self.piece_place(&pieces[0].location);
        }
        let mut bytes = Vec::new();
        for piece in &pieces {
            let size = usize::try_from(piece.size_in_bits.unwrap_or(64) / 8).unwrap_or(8);
            let data = match self.piece_place(&piece.location)? {
                Place::Memory(addr) => {
                    let mut buf = vec![0; size];
                    self.frame.read_memory(addr, &mut buf)?;
                    buf
                }
                Place::Register(r) => match register_bytes(self.frame, r) {
                    Some(b) => b,
                    None => return Ok(Place::Unavailable("register unavailable".into())),
                },
                Place::Bytes(b) => b,
                other => return Ok(other),
            };
            let mut data = data;
            data.resize(size, 0);
            bytes.extend_from_slice(&data);
        }
        Ok(Place::Bytes(bytes))
    }

    fn piece_place(&self, location: &Location<R>) -> Result<Place> {
        Ok(match location {
            Location::Empty => Place::OptimizedOut,
            Location::Register { register } => Place::Register(register.0),
            Location::Address { address } => Place::Memory(*address),
            Location::Value { value } => Place::Bytes(value_bytes(*value)),
            Location::Bytes { value } => Place::Bytes(value.slice().to_vec()),
            Location::ImplicitPointer { .. } => Place::Unavailable("synthetic pointer".into()),
        })
    }
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

/// The bytes a place holds, `size` of them.
pub(crate) fn read_place(
    place: &Place,
    size: usize,
    frame: &dyn FrameContext,
) -> Result<std::result::Result<Vec<u8>, crate::value::Value>> {
    use crate::value::Value;
    Ok(Ok(match place {
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
        Place::OptimizedOut => return Ok(Err(Value::OptimizedOut)),
        Place::Unavailable(why) => return Ok(Err(Value::Unavailable(why.clone()))),
        Place::ThreadLocal(_) => return Ok(Err(Value::Unavailable("thread-local storage".into()))),
    }))
}
