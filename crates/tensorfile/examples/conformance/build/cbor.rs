//! A small CBOR encoder: enough for zTensor indexes, well-formed or not.

/// A CBOR item.
#[derive(Debug, Clone)]
pub enum C {
    /// An unsigned integer (major type 0).
    U(u64),
    /// A negative integer `-1 - n` (major type 1).
    Neg(u64),
    Text(String),
    /// A text string of these bytes (which need not be UTF-8).
    TextBytes(Vec<u8>),
    Array(Vec<C>),
    /// A definite-length map.
    Map(Vec<(C, C)>),
    /// An indefinite-length map, as the zTensor reference writes them.
    IndefMap(Vec<(C, C)>),
    /// Bytes written as they are (for malformed items).
    Raw(Vec<u8>),
}

pub fn t(s: &str) -> C {
    C::Text(s.to_string())
}

fn head(out: &mut Vec<u8>, major: u8, v: u64) {
    let m = major << 5;
    if v < 24 {
        out.push(m | v as u8);
    } else if v <= 0xff {
        out.extend_from_slice(&[m | 24, v as u8]);
    } else if v <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn encode(c: &C) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, c);
    out
}

fn put(out: &mut Vec<u8>, c: &C) {
    match c {
        C::U(v) => head(out, 0, *v),
        C::Neg(n) => head(out, 1, *n),
        C::Text(s) => {
            head(out, 3, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        C::TextBytes(b) => {
            head(out, 3, b.len() as u64);
            out.extend_from_slice(b);
        }
        C::Array(items) => {
            head(out, 4, items.len() as u64);
            items.iter().for_each(|i| put(out, i));
        }
        C::Map(pairs) => {
            head(out, 5, pairs.len() as u64);
            for (k, v) in pairs {
                put(out, k);
                put(out, v);
            }
        }
        C::IndefMap(pairs) => {
            out.push(0xbf);
            for (k, v) in pairs {
                put(out, k);
                put(out, v);
            }
            out.push(0xff);
        }
        C::Raw(b) => out.extend_from_slice(b),
    }
}
