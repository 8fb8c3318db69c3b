//! The decoded XNNPACK graph: operators, values, constants and their quantization.

use super::datatype::Datatype;
use super::header::PayloadHeader;
use crate::model::DType;

/// XNNPACK's "no value" id (an absent bias, an unused input).
pub const INVALID_ID: u32 = u32::MAX;

/// A decoded XNNPACK delegate payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// The flatbuffer's identifier: `XN01`, or `XN00` from older exporters.
    pub identifier: String,
    /// The payload's header, when it has one (else the payload is the flatbuffer alone).
    pub header: Option<PayloadHeader>,
    /// The graph's schema version string (may be empty).
    pub version: String,
    /// The operators, in execution order.
    pub nodes: Vec<Node>,
    /// The values (tensors), in the payload's order.
    pub values: Vec<TensorValue>,
    /// How many ids are reserved for external inputs and outputs.
    pub num_externs: u32,
    /// Value ids of the graph's inputs.
    pub input_ids: Vec<u32>,
    /// Value ids of the graph's outputs.
    pub output_ids: Vec<u32>,
    /// Every value with constant data, in value order.
    pub constants: Vec<Constant>,
}

/// One operator of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The operator's name in the payload's union without its `XNN` prefix (`Conv2d`,
    /// `FullyConnected`, `Add`...).
    pub operator: String,
    /// Ids of the values it reads (absent optional inputs, such as a missing bias, left out).
    pub inputs: Vec<u32>,
    /// Ids of the values it writes.
    pub outputs: Vec<u32>,
    /// The node's flags.
    pub flags: u32,
    /// The id linking it back to the exported graph's node.
    pub debug_handle: u32,
}

/// A tensor value of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorValue {
    /// The value's id (`id_out`), which nodes refer to.
    pub id: u32,
    /// What its elements are.
    pub datatype: Datatype,
    /// Its dimensions, outermost first.
    pub dims: Vec<u64>,
    /// Index into the constant table (0: no constant data).
    pub constant_buffer: u32,
    /// Its external id ([`INVALID_ID`] when internal).
    pub external_id: u32,
    /// Whether it is an external input of the graph (flag 1).
    pub is_input: bool,
    /// Whether it is an external output of the graph (flag 2).
    pub is_output: bool,
    /// The datatype it is quantized to at run time, for dynamically quantized inputs.
    pub dq_datatype: Option<Datatype>,
    /// Its quantization, for quantized values.
    pub quantization: Option<Quantization>,
}

/// How a quantized value's numbers map to reals.
#[derive(Debug, Clone, PartialEq)]
pub enum Quantization {
    /// One scale and zero point for the whole tensor.
    PerTensor {
        /// The scale.
        scale: f64,
        /// The zero point.
        zero_point: i64,
    },
    /// One scale per channel along `channel_dim` (zero points 0).
    PerChannel {
        /// The channel dimension.
        channel_dim: u32,
        /// The scales.
        scales: Scales,
    },
    /// One scale per block of `group_size` elements of each channel (blockwise, 4-bit).
    Blockwise {
        /// The channel dimension.
        channel_dim: u32,
        /// Elements per block.
        group_size: u64,
        /// The scales.
        scales: Scales,
    },
    /// Scales computed at run time per token: one per row of the leading dimensions.
    PerTokenDynamic {
        /// Trailing dimensions forming one token.
        num_nonbatch_dims: i64,
    },
}

/// Where a quantization's scales are.
#[derive(Debug, Clone, PartialEq)]
pub enum Scales {
    /// In the flatbuffer (float32).
    Inline(Vec<f64>),
    /// In constant data, `count` scales of `dtype` (float32 per channel, bfloat16 blockwise).
    Stored {
        /// Where their bytes are.
        data: ConstantData,
        /// How many scales.
        count: u64,
        /// Their element type.
        dtype: DType,
    },
}

impl Scales {
    /// How many scales there are.
    pub fn count(&self) -> u64 {
        match self {
            Scales::Inline(v) => v.len() as u64,
            Scales::Stored { count, .. } => *count,
        }
    }
}

/// Where a constant's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstantData {
    /// Under this key in the program's named data (or its `.ptd`); `size` bytes.
    Named {
        /// The named-data key.
        key: String,
        /// The size the payload declares.
        size: u64,
    },
    /// At `offset` within the payload's constant data, `size` bytes.
    Offset {
        /// Offset within the constant data (after the header's constant data offset).
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// In the deprecated in-flatbuffer buffer `index` (XN00 payloads without a header).
    Inline {
        /// Index into the graph's `constant_buffer`.
        index: u32,
        /// Bytes stored there.
        size: u64,
    },
}

impl ConstantData {
    /// Bytes the payload declares for the constant.
    #[cfg(any(test, feature = "internals"))]
    pub fn size(&self) -> u64 {
        match self {
            ConstantData::Named { size, .. }
            | ConstantData::Offset { size, .. }
            | ConstantData::Inline { size, .. } => *size,
        }
    }

    /// The named-data key, for data stored by name.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConstantData::Named { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// A value with constant data: what its bytes are and where they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    /// The value's id.
    pub value: u32,
    /// What its elements are.
    pub datatype: Datatype,
    /// Our dtype for them, where one exists.
    pub dtype: Option<DType>,
    /// Its shape (the value's dims).
    pub shape: Vec<u64>,
    /// Bytes its dtype and shape take, when the element size is known.
    pub nbytes: Option<u64>,
    /// Where its bytes are.
    pub data: ConstantData,
    /// Its quantization, if quantized.
    pub quantization: Option<Quantization>,
}
