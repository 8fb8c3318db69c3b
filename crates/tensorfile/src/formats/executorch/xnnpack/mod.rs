//! The payload of ExecuTorch's XNNPACK delegate (`XnnpackBackend`): an optional header
//! ([`PayloadHeader`], `XH00`), a flatbuffer graph (identifier `XN01`, or `XN00` from older
//! exporters; schema `crates/tensorfile/schema/xnnpack.fbs`), then constant data.
//!
//! [`decode`] gives a [`Graph`]: its operators, its values, and for each constant its type,
//! shape, quantization and where its bytes are (a key of the program's named data, a range of
//! the payload's constant data, or an old inline buffer). Every id, index and size from the
//! payload is checked; nothing is trusted.

mod datatype;
mod graph;
pub mod header;
mod json;
mod model;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

#[cfg(any(test, feature = "internals"))]
pub use datatype::Datatype;
pub use header::PayloadHeader;
pub use model::{Constant, ConstantData, Graph, Quantization, Scales};
#[cfg(any(test, feature = "internals"))]
pub use model::{INVALID_ID, Node, TensorValue};

use crate::error::{Error, Result, Rule};
use crate::flatbuf::{self, Schema, schema};
use crate::source::Bytes;

/// The delegate id of the XNNPACK backend in a program.
pub const BACKEND_ID: &str = "XnnpackBackend";

/// The schema text; one set of tables for both identifiers.
const SCHEMA: &str = include_str!("../../../../schema/xnnpack.fbs");

fn parse(text: &str) -> Schema {
    // Ours, compiled in, and tested to parse: a failure is a build bug.
    schema::parse(text).unwrap_or_else(|e| panic!("bad compiled-in schema: {}", e.0))
}

/// The XNNPACK graph schema for identifier `XN01` (what ExecuTorch 1.x writes).
pub fn graph_schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| parse(SCHEMA))
}

/// The same tables under the older identifier `XN00`.
fn graph_schema_xn00() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| parse(&SCHEMA.replace("file_identifier \"XN01\"", "file_identifier \"XN00\"")))
}

/// Decode an XNNPACK delegate payload.
#[cfg(any(test, feature = "internals"))]
pub fn decode(payload: &Bytes) -> Result<Graph> {
    let (header, offset, len) = locate(payload, payload.len() as u64)?;
    decode_flatbuffer(&payload.slice(offset, len)?, header)
}

/// Where the flatbuffer of a payload of `len` bytes is, from `head`, its first bytes (at
/// least [`header::LENGTH`], or all): its header if it has one, and the flatbuffer's offset
/// and size. What a reader of a payload by range fetches first.
pub fn locate(head: &[u8], len: u64) -> Result<(Option<PayloadHeader>, u64, u64)> {
    Ok(match PayloadHeader::parse_head(head, len)? {
        Some(h) => (Some(h), u64::from(h.flatbuffer_offset), u64::from(h.flatbuffer_size)),
        None => (None, 0, len),
    })
}

/// Decode the flatbuffer `fb` of a payload with `header` (found by [`locate`]).
pub fn decode_flatbuffer(fb: &Bytes, header: Option<PayloadHeader>) -> Result<Graph> {
    let schema = match fb.get(4..8) {
        Some(b"XN01") => graph_schema(),
        Some(b"XN00") => graph_schema_xn00(),
        Some(other) => {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!(
                    "XNNPACK payload: neither the XH00 header nor a XN00/XN01 flatbuffer (found {:?})",
                    String::from_utf8_lossy(other)
                ),
            ));
        }
        None => return Err(Error::invalid(Rule::Truncated, "XNNPACK payload shorter than 8 bytes")),
    };
    let root = flatbuf::decode(schema, fb)?;
    let identifier = String::from_utf8_lossy(&fb[4..8]).into_owned();
    let constant_data = header.map(|h| (u64::from(h.constant_data_offset), h.constant_data_size));
    graph::build(&root, identifier, header, constant_data)
}

/// The fuzz target's body (`xnnpack_payload`): any bytes decoded as a payload give an error
/// or a graph whose JSON, operator counts and constant sizes can all be computed; never a
/// panic or a runaway decode.
#[cfg(any(test, feature = "internals"))]
pub fn exercise(payload: &[u8]) {
    let Ok(graph) = decode(&Bytes::from_vec(payload.to_vec())) else { return };
    let _ = graph.to_json();
    let counts = graph.operator_counts();
    assert_eq!(counts.values().sum::<u64>(), graph.nodes.len() as u64, "every node counted once");
    for c in &graph.constants {
        if let (Some(d), Some(n)) = (c.dtype, c.nbytes) {
            assert_eq!(d.nbytes(crate::checked::numel(&c.shape).expect("checked when decoded")).ok(), Some(n));
        }
    }
}
