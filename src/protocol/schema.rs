//! Kafka's schema primitives for the records coordinators keep in their
//! internal topics (`__consumer_offsets`, `__transaction_state`): a writer
//! and a bounds-checked reader of int8/16/32/64, UUIDs, varints, classic and
//! compact strings, bytes and arrays, and tagged fields. The records'
//! layouts are in `group::records` and `txn::records`; the `kafka-protocol`
//! crate does not generate them.
//!
//! Pure code: used on any core.

use bytes::{BufMut, Bytes, BytesMut};
use thiserror::Error;
use uuid::Uuid;

/// Why a record could not be decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer bytes than a field needs.
    #[error("record truncated at byte {position}")]
    Truncated {
        /// Where the missing field starts.
        position: usize,
    },
    /// A length prefix below -1, or -1 where the field is not nullable.
    #[error("invalid length {length} at byte {position}")]
    InvalidLength {
        /// The length read.
        length: i64,
        /// Where the length starts.
        position: usize,
    },
    /// A string that is not UTF-8.
    #[error("string at byte {position} is not UTF-8")]
    InvalidUtf8 {
        /// Where the string's bytes start.
        position: usize,
    },
    /// A key type this broker does not handle (KIP-848, share or streams
    /// records): callers replaying the log skip these.
    #[error("unsupported record type {record_type}")]
    UnsupportedRecordType {
        /// The key's leading int16.
        record_type: i16,
    },
    /// A value version outside the schema's range.
    #[error("unsupported {record} value version {version}")]
    UnsupportedValueVersion {
        /// Which value schema.
        record: &'static str,
        /// The value's leading int16.
        version: i16,
    },
    /// Bytes left over after the last field.
    #[error("{remaining} bytes after the end of the record")]
    TrailingBytes {
        /// How many.
        remaining: usize,
    },
}

/// Writes Kafka's primitive types, classic or flexible (compact) encoding.
pub(crate) struct Writer {
    buf: BytesMut,
    flexible: bool,
}

impl Writer {
    pub(crate) fn new(flexible: bool) -> Self {
        Writer {
            buf: BytesMut::new(),
            flexible,
        }
    }

    pub(crate) fn finish(self) -> Bytes {
        self.buf.freeze()
    }

    pub(crate) fn i16(&mut self, value: i16) {
        self.buf.put_i16(value);
    }

    pub(crate) fn i32(&mut self, value: i32) {
        self.buf.put_i32(value);
    }

    pub(crate) fn i8(&mut self, value: i8) {
        self.buf.put_i8(value);
    }

    pub(crate) fn uuid(&mut self, value: &Uuid) {
        self.buf.put_slice(value.as_bytes());
    }

    pub(crate) fn i64(&mut self, value: i64) {
        self.buf.put_i64(value);
    }

    pub(crate) fn unsigned_varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.put_u8((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.buf.put_u8(value as u8);
    }

    /// A length prefix: int16/int32 classic, unsigned varint of n+1 compact;
    /// None is null.
    pub(crate) fn length(&mut self, length: Option<usize>, classic_int16: bool) {
        if self.flexible {
            self.unsigned_varint(length.map_or(0, |n| n as u64 + 1));
        } else if classic_int16 {
            // Strings come from requests, whose decoder refuses any over
            // 0x7fff bytes, as Kafka's does (the vendored kafka-protocol).
            let n = length.map_or(-1, |n| {
                i16::try_from(n).expect("string longer than 32767 bytes")
            });
            self.i16(n);
        } else {
            let n = length.map_or(-1, |n| i32::try_from(n).expect("bytes longer than 2^31"));
            self.i32(n);
        }
    }

    pub(crate) fn string(&mut self, value: &str) {
        self.nullable_string(Some(value));
    }

    pub(crate) fn nullable_string(&mut self, value: Option<&str>) {
        self.length(value.map(str::len), true);
        if let Some(value) = value {
            self.buf.put_slice(value.as_bytes());
        }
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) {
        self.length(Some(value.len()), false);
        self.buf.put_slice(value);
    }

    pub(crate) fn array_len(&mut self, count: usize) {
        self.length(Some(count), false);
    }

    /// An array length that may be null (-1 classic, 0 compact).
    pub(crate) fn nullable_array_len(&mut self, count: Option<usize>) {
        self.length(count, false);
    }

    /// Bytes as they are, with no length.
    pub(crate) fn raw(&mut self, value: &[u8]) {
        self.buf.put_slice(value);
    }

    /// The (empty) tagged-field section of a flexible struct.
    pub(crate) fn tagged_fields(&mut self) {
        self.tagged_fields_with(&[]);
    }

    /// A flexible struct's tagged-field section holding `fields` (tag and
    /// value bytes, in ascending tag order); nothing in a classic version.
    pub(crate) fn tagged_fields_with(&mut self, fields: &[(u64, &[u8])]) {
        if !self.flexible {
            return;
        }
        self.unsigned_varint(fields.len() as u64);
        for (tag, value) in fields {
            self.unsigned_varint(*tag);
            self.unsigned_varint(value.len() as u64);
            self.buf.put_slice(value);
        }
    }
}

/// Reads Kafka's primitive types with bounds checks; lengths never reserve
/// more than the bytes left.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    flexible: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], flexible: bool) -> Self {
        Reader {
            bytes,
            position: 0,
            flexible,
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self
            .position
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(RecordError::Truncated {
                position: self.position,
            })?;
        let slice = &self.bytes[self.position..end];
        self.position = end;
        Ok(slice)
    }

    pub(crate) fn i16(&mut self) -> Result<i16, RecordError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, RecordError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn i8(&mut self) -> Result<i8, RecordError> {
        Ok(self.take(1)?[0] as i8)
    }

    pub(crate) fn uuid(&mut self) -> Result<Uuid, RecordError> {
        let b = self.take(16)?;
        let mut array = [0u8; 16];
        array.copy_from_slice(b);
        Ok(Uuid::from_bytes(array))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, RecordError> {
        let b = self.take(8)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(b);
        Ok(i64::from_be_bytes(array))
    }

    pub(crate) fn unsigned_varint(&mut self) -> Result<u64, RecordError> {
        let start = self.position;
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordError::InvalidLength {
            length: -1,
            position: start,
        })
    }

    /// A length prefix; None is null (-1 classic, 0 compact).
    pub(crate) fn length(&mut self, classic_int16: bool) -> Result<Option<usize>, RecordError> {
        let position = self.position;
        let length: i64 = if self.flexible {
            self.unsigned_varint()? as i64 - 1
        } else if classic_int16 {
            i64::from(self.i16()?)
        } else {
            i64::from(self.i32()?)
        };
        match length {
            -1 => Ok(None),
            n if n >= 0 => Ok(Some(n as usize)),
            n => Err(RecordError::InvalidLength {
                length: n,
                position,
            }),
        }
    }

    pub(crate) fn nullable_string(&mut self) -> Result<Option<String>, RecordError> {
        let Some(length) = self.length(true)? else {
            return Ok(None);
        };
        let position = self.position;
        let raw = self.take(length)?;
        let text = std::str::from_utf8(raw).map_err(|_| RecordError::InvalidUtf8 { position })?;
        Ok(Some(text.to_string()))
    }

    pub(crate) fn string(&mut self) -> Result<String, RecordError> {
        let position = self.position;
        self.nullable_string()?.ok_or(RecordError::InvalidLength {
            length: -1,
            position,
        })
    }

    pub(crate) fn bytes(&mut self) -> Result<Bytes, RecordError> {
        let position = self.position;
        let length = self.length(false)?.ok_or(RecordError::InvalidLength {
            length: -1,
            position,
        })?;
        Ok(Bytes::copy_from_slice(self.take(length)?))
    }

    pub(crate) fn array_len(&mut self) -> Result<usize, RecordError> {
        let position = self.position;
        self.nullable_array_len()?
            .ok_or(RecordError::InvalidLength {
                length: -1,
                position,
            })
    }

    /// An array length that may be null (None).
    pub(crate) fn nullable_array_len(&mut self) -> Result<Option<usize>, RecordError> {
        let position = self.position;
        let Some(count) = self.length(false)? else {
            return Ok(None);
        };
        // Every element takes at least one byte: a count beyond the bytes
        // left is corrupt, and must not drive an allocation.
        if count > self.bytes.len() - self.position {
            return Err(RecordError::InvalidLength {
                length: count as i64,
                position,
            });
        }
        Ok(Some(count))
    }

    /// Reads a flexible struct's tagged-field section and returns the
    /// field with tag `wanted`, if there is one; the others are skipped.
    pub(crate) fn tagged_field(&mut self, wanted: u64) -> Result<Option<&'a [u8]>, RecordError> {
        let mut found = None;
        self.tagged_fields(|tag, field| {
            if tag == wanted {
                found = Some(field);
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// Reads a flexible struct's tagged-field section, handing each field's
    /// tag and bytes to `visit`; nothing in a classic version.
    pub(crate) fn tagged_fields(
        &mut self,
        mut visit: impl FnMut(u64, &'a [u8]) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        if !self.flexible {
            return Ok(());
        }
        for _ in 0..self.unsigned_varint()? {
            let tag = self.unsigned_varint()?;
            let size = self.unsigned_varint()?;
            let size = usize::try_from(size).map_err(|_| RecordError::Truncated {
                position: self.position,
            })?;
            visit(tag, self.take(size)?)?;
        }
        Ok(())
    }

    /// Skips a flexible struct's tagged fields (those a later Kafka version
    /// may add).
    pub(crate) fn skip_tagged_fields(&mut self) -> Result<(), RecordError> {
        self.tagged_fields(|_, _| Ok(()))
    }

    pub(crate) fn finish(&self) -> Result<(), RecordError> {
        match self.bytes.len() - self.position {
            0 => Ok(()),
            remaining => Err(RecordError::TrailingBytes { remaining }),
        }
    }
}
