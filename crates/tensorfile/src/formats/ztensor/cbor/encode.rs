//! The encoder, in the zTensor 0.1 reference's style.

use crate::model::MetaValue;

/// Appends CBOR to a buffer in the reference's style.
#[derive(Default)]
pub struct Encoder {
    pub out: Vec<u8>,
}

impl Encoder {
    fn head(&mut self, major: u8, value: u64) {
        let m = major << 5;
        if value < 24 {
            self.out.push(m | value as u8);
        } else if value <= u64::from(u8::MAX) {
            self.out.extend_from_slice(&[m | 24, value as u8]);
        } else if value <= u64::from(u16::MAX) {
            self.out.push(m | 25);
            self.out.extend_from_slice(&(value as u16).to_be_bytes());
        } else if value <= u64::from(u32::MAX) {
            self.out.push(m | 26);
            self.out.extend_from_slice(&(value as u32).to_be_bytes());
        } else {
            self.out.push(m | 27);
            self.out.extend_from_slice(&value.to_be_bytes());
        }
    }

    pub fn uint(&mut self, v: u64) {
        self.head(0, v);
    }

    pub fn text(&mut self, s: &str) {
        self.head(3, s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
    }

    pub fn array_header(&mut self, len: u64) {
        self.head(4, len);
    }

    pub fn map_begin_indefinite(&mut self) {
        self.out.push(0xbf);
    }

    pub fn end_indefinite(&mut self) {
        self.out.push(0xff);
    }

    /// A float in the shortest form that keeps its value (CBOR's preferred serialization, as
    /// the reference writes): half, single or double; NaN as the canonical half NaN.
    pub fn float(&mut self, f: f64) {
        let single = f as f32;
        if f.is_nan() {
            self.out.extend_from_slice(&[0xf9, 0x7e, 0x00]);
        } else if f64::from(single) == f || f.is_infinite() {
            let half = half::f16::from_f32(single);
            if f32::from(half) == single {
                self.out.push(0xf9);
                self.out.extend_from_slice(&half.to_bits().to_be_bytes());
            } else {
                self.out.push(0xfa);
                self.out.extend_from_slice(&single.to_bits().to_be_bytes());
            }
        } else {
            self.out.push(0xfb);
            self.out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
    }

    /// Any metadata value, integers and floats in their shortest form.
    pub fn value(&mut self, v: &MetaValue) {
        match v {
            MetaValue::Null => self.out.push(0xf6),
            MetaValue::Undefined => self.out.push(0xf7),
            MetaValue::Bool(b) => self.out.push(if *b { 0xf5 } else { 0xf4 }),
            MetaValue::Int(i) => {
                if *i >= 0 {
                    self.head(0, u64::try_from(*i).unwrap_or(u64::MAX));
                } else {
                    self.head(1, u64::try_from(-1 - *i).unwrap_or(u64::MAX));
                }
            }
            MetaValue::Float(f) => self.float(*f),
            MetaValue::Text(s) => self.text(s),
            MetaValue::Bytes(b) => {
                self.head(2, b.len() as u64);
                self.out.extend_from_slice(b);
            }
            MetaValue::Array(items) => {
                self.array_header(items.len() as u64);
                items.iter().for_each(|i| self.value(i));
            }
            MetaValue::Map(pairs) => {
                self.head(5, pairs.len() as u64);
                for (k, v) in pairs {
                    self.value(k);
                    self.value(v);
                }
            }
            MetaValue::Tagged(tag, inner) => {
                self.head(6, *tag);
                self.value(inner);
            }
            MetaValue::Simple(s) => {
                if *s < 24 {
                    self.out.push(0xe0 | s);
                } else {
                    self.out.extend_from_slice(&[0xf8, *s]);
                }
            }
            // CBOR keeps no widths: numbers in their shortest form, arrays as arrays.
            MetaValue::Number(_) | MetaValue::TypedArray(_) => self.value(&v.untyped()),
        }
    }
}
