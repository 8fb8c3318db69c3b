//! The start of an `.npy` file: magic, version, header length, and the header dict
//! (`descr`, `fortran_order`, `shape`) checked as NumPy checks it.

use super::literal::{self, Literal};
use super::{MAGIC, MAX_HEADER, descr_dtype};
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_RANK;
use crate::model::{ByteOrder, DType};

/// The fixed bytes before the header dict: where the dict starts and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Preamble {
    /// The format version (1, 2 or 3; the minor version is 0).
    pub major: u8,
    /// Where the dict starts (10 for version 1, 12 after).
    pub dict_at: u64,
    /// The dict's length in bytes, padding included.
    pub dict_len: u64,
}

impl Preamble {
    /// Where the array data starts.
    pub fn data_at(&self) -> u64 {
        self.dict_at + self.dict_len
    }
}

/// Whether `bytes` start with the `.npy` magic.
pub(crate) fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Read the preamble from the first bytes of a file (at least 12 where the file has them).
pub(crate) fn preamble(head: &[u8]) -> Result<Preamble> {
    let mut c = crate::cursor::Cursor::new(head);
    let magic = c.take(MAGIC.len(), "magic")?;
    if magic != MAGIC {
        return Err(Error::invalid(Rule::BadMagic, "not an .npy file: it does not start with \\x93NUMPY"));
    }
    let (major, minor) = (c.u8("major version")?, c.u8("minor version")?);
    let dict_len = match (major, minor) {
        (1, 0) => u64::from(c.u16_le("header length")?),
        (2 | 3, 0) => u64::from(c.u32_le("header length")?),
        _ => {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!(".npy format version {major}.{minor} (NumPy reads 1.0, 2.0 and 3.0)"),
            ));
        }
    };
    if dict_len > MAX_HEADER {
        return Err(Error::invalid(
            Rule::HeaderTooLarge,
            format!("a header of {dict_len} bytes (NumPy's limit is {MAX_HEADER})"),
        ));
    }
    Ok(Preamble { major, dict_at: c.position() as u64, dict_len })
}

/// What a header says about its array.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub preamble: Preamble,
    /// The `descr` as written (a dtype string, or the text of a structured descr).
    pub descr: String,
    /// The element type and byte order, or why tensorfile does not read the descr.
    pub dtype: std::result::Result<(DType, ByteOrder), Error>,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
}

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadField, format!("header: {}", detail.into()))
}

/// Parse the dict `bytes` (Latin-1 text in versions 1 and 2, UTF-8 in version 3).
pub(crate) fn header(preamble: Preamble, bytes: &[u8]) -> Result<Header> {
    let text: String = if preamble.major >= 3 {
        std::str::from_utf8(bytes).map_err(|e| Error::invalid(Rule::BadUtf8, format!("header: {e}")))?.to_string()
    } else {
        bytes.iter().map(|&b| char::from(b)).collect()
    };
    let Literal::Dict(pairs) = literal::parse(&text)? else {
        return Err(bad("not a dict"));
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (key, value) in pairs {
        let slot = match &key {
            Literal::Str(k) if k == "descr" => &mut descr,
            Literal::Str(k) if k == "fortran_order" => &mut fortran,
            Literal::Str(k) if k == "shape" => &mut shape,
            Literal::Str(k) => {
                return Err(bad(format!("unexpected key {k:?} (NumPy allows descr, fortran_order, shape)")));
            }
            other => return Err(bad(format!("a key that is {}", other.kind()))),
        };
        if slot.replace(value).is_some() {
            return Err(bad(format!("the key {key:?} twice")));
        }
    }
    let missing = |k: &str| Error::invalid(Rule::MissingField, format!("header: no {k:?}"));
    let descr = descr.ok_or_else(|| missing("descr"))?;
    let fortran_order = match fortran.ok_or_else(|| missing("fortran_order"))? {
        Literal::Bool(b) => b,
        other => return Err(bad(format!("fortran_order is {}, not a bool", other.kind()))),
    };
    let shape = match shape.ok_or_else(|| missing("shape"))? {
        Literal::Tuple(dims) if dims.len() > MAX_RANK => {
            return Err(bad(format!("rank {} exceeds {MAX_RANK}", dims.len())));
        }
        Literal::Tuple(dims) => dims
            .into_iter()
            .map(|d| match d {
                Literal::Int(n) => u64::try_from(n).map_err(|_| bad(format!("shape dimension {n}"))),
                other => Err(bad(format!("a shape dimension that is {}", other.kind()))),
            })
            .collect::<Result<Vec<u64>>>()?,
        other => return Err(bad(format!("shape is {}, not a tuple", other.kind()))),
    };
    let (descr, dtype) = match descr {
        Literal::Str(s) => {
            let dtype = descr_dtype(&s);
            (s, dtype)
        }
        Literal::List(_) => {
            let why = Error::invalid(
                Rule::UnknownDType,
                "a structured dtype (a list of fields): tensorfile reads arrays of one numeric dtype",
            );
            ("structured".to_string(), Err(why))
        }
        other => return Err(bad(format!("descr is {}, not a string", other.kind()))),
    };
    Ok(Header { preamble, descr, dtype, fortran_order, shape })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(version: u8, dict: &str) -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[version, 0]);
        if version == 1 {
            f.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        } else {
            f.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        }
        f.extend_from_slice(dict.as_bytes());
        f
    }

    fn parsed(version: u8, dict: &str) -> Result<Header> {
        let f = file(version, dict);
        let p = preamble(&f)?;
        header(p, &f[p.dict_at as usize..p.data_at() as usize])
    }

    #[test]
    fn versions_and_keys() {
        let h = parsed(1, "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }\n").unwrap();
        assert_eq!((h.preamble.major, h.preamble.dict_at), (1, 10));
        assert_eq!((h.dtype.unwrap(), h.fortran_order, h.shape), ((DType::Int16, ByteOrder::Big), true, vec![2, 3]));
        let h = parsed(3, "{'shape': (), 'descr': '<c16', 'fortran_order': False}").unwrap();
        assert_eq!((h.preamble.dict_at, h.shape.len()), (12, 0));
        let h = parsed(2, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}").unwrap();
        assert_eq!(h.dtype.unwrap_err().rule(), Some(Rule::UnknownDType));
    }

    #[test]
    fn broken_headers_name_their_rule() {
        let cases = [
            ("{'descr': '<f4', 'shape': (1,)}", Rule::MissingField),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", Rule::BadField),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", Rule::BadField),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", Rule::BadField),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", Rule::BadField),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", Rule::BadField),
            ("{'descr': 4, 'fortran_order': False, 'shape': (1,)}", Rule::BadField),
            ("['descr']", Rule::BadField),
        ];
        for (dict, rule) in cases {
            assert_eq!(parsed(1, dict).unwrap_err().rule(), Some(rule), "{dict}");
        }
        let mut f = file(3, "{'descr': '\u{e9}', 'fortran_order': False, 'shape': ()}");
        let at = f.iter().position(|&b| b == 0xc3).unwrap();
        f[at] = 0xff;
        let p = preamble(&f).unwrap();
        assert_eq!(header(p, &f[12..]).unwrap_err().rule(), Some(Rule::BadUtf8));
        assert_eq!(preamble(b"\x93NUMPY\x04\x00\x00\x00").unwrap_err().rule(), Some(Rule::BadMagic));
        assert_eq!(preamble(b"\x93NUMPX\x01\x00\x00\x00").unwrap_err().rule(), Some(Rule::BadMagic));
        assert_eq!(preamble(b"\x93NUMPY\x01").unwrap_err().rule(), Some(Rule::Truncated));
        let big = [&MAGIC[..], &[2, 0], &10_001u32.to_le_bytes()].concat();
        assert_eq!(preamble(&big).unwrap_err().rule(), Some(Rule::HeaderTooLarge));
    }
}
