//! numpy's basic slicing, one item per axis separated by commas: `i` (an index, negative from
//! the end; the axis is dropped), `a:b`, `a:b:s` (any part may be left out; bounds past the
//! ends are clipped as numpy does), `:`. Fewer items than axes leave the rest whole.

use crate::error::{Error, Result};

/// One axis of a slice as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AxisSlice {
    /// One index: the axis is dropped.
    Index(i64),
    /// `start:stop:step`, each part optional.
    Range {
        /// First index (default: the start, or the end for a negative step).
        start: Option<i64>,
        /// Index to stop before (default: past the end).
        stop: Option<i64>,
        /// Step, not zero (default 1).
        step: i64,
    },
}

/// A slice as the user wrote it: `0:4,:8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    axes: Vec<AxisSlice>,
}

/// The indices one axis keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected {
    /// One index; the axis is dropped from the result.
    Index(u64),
    /// `len` indices from `start`, `step` apart (negative steps go backwards).
    Range {
        /// The first index kept.
        start: u64,
        /// Distance between kept indices.
        step: i64,
        /// How many indices are kept.
        len: u64,
    },
}

impl Selected {
    /// The `i`-th index kept (`i` below the count kept).
    pub fn at(&self, i: u64) -> u64 {
        match *self {
            Selected::Index(n) => n,
            Selected::Range { start, step, .. } => (i128::from(start) + i128::from(i) * i128::from(step)) as u64,
        }
    }
}

fn parse_number(text: &str, axis: usize, item: &str) -> Result<Option<i64>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<i64>()
        .map(Some)
        .map_err(|_| Error::usage(format!("slice axis {axis}: {item:?} is not an index or a start:stop:step slice")))
}

impl Slice {
    /// Parse `text`; errors name the axis of the item that does not parse.
    pub fn parse(text: &str) -> Result<Slice> {
        let mut axes = Vec::new();
        for (axis, item) in text.split(',').enumerate() {
            let parts: Vec<&str> = item.split(':').collect();
            let slice = match parts.as_slice() {
                [one] => match parse_number(one, axis, item)? {
                    Some(i) => AxisSlice::Index(i),
                    None => {
                        return Err(Error::usage(format!(
                            "slice axis {axis}: nothing given (use : for the whole axis)"
                        )));
                    }
                },
                [start, stop] | [start, stop, _] => {
                    let step = match parts.get(2) {
                        Some(s) => parse_number(s, axis, item)?.unwrap_or(1),
                        None => 1,
                    };
                    if step == 0 {
                        return Err(Error::usage(format!("slice axis {axis}: the step cannot be zero")));
                    }
                    AxisSlice::Range {
                        start: parse_number(start, axis, item)?,
                        stop: parse_number(stop, axis, item)?,
                        step,
                    }
                }
                _ => {
                    return Err(Error::usage(format!("slice axis {axis}: {item:?} has more than two colons")));
                }
            };
            axes.push(slice);
        }
        Ok(Slice { axes })
    }

    /// The slice's axes as parsed.
    pub fn axes(&self) -> &[AxisSlice] {
        &self.axes
    }

    /// The indices kept on each axis of `shape`. Errors: more items than axes, an index out of
    /// bounds (naming the axis, the index and the axis's size).
    pub fn apply(&self, shape: &[u64]) -> Result<Vec<Selected>> {
        if self.axes.len() > shape.len() {
            return Err(Error::usage(format!(
                "the slice has {} axes but the tensor has {} (shape {shape:?})",
                self.axes.len(),
                shape.len()
            )));
        }
        let mut out = Vec::with_capacity(shape.len());
        for (axis, &len) in shape.iter().enumerate() {
            let n = i128::from(len);
            let selected = match self.axes.get(axis) {
                None => Selected::Range { start: 0, step: 1, len },
                Some(&AxisSlice::Index(i)) => {
                    let at = if i < 0 { n + i128::from(i) } else { i128::from(i) };
                    if at < 0 || at >= n {
                        return Err(Error::usage(format!(
                            "slice axis {axis}: index {i} is out of bounds for size {len}"
                        )));
                    }
                    Selected::Index(at as u64)
                }
                Some(&AxisSlice::Range { start, stop, step }) => range(n, start, stop, step),
            };
            out.push(selected);
        }
        Ok(out)
    }
}

/// Python's `slice(start, stop, step).indices(n)`, and the count kept.
fn range(n: i128, start: Option<i64>, stop: Option<i64>, step: i64) -> Selected {
    let step_wide = i128::from(step);
    let clip = |v: i64, low: i128, high: i128| {
        let v = i128::from(v);
        let v = if v < 0 { v + n } else { v };
        v.clamp(low, high)
    };
    let (start, stop) = if step > 0 {
        (start.map_or(0, |s| clip(s, 0, n)), stop.map_or(n, |s| clip(s, 0, n)))
    } else {
        (start.map_or(n - 1, |s| clip(s, -1, n - 1)), stop.map_or(-1, |s| clip(s, -1, n - 1)))
    };
    let len = if step > 0 {
        if stop > start { (stop - start + step_wide - 1) / step_wide } else { 0 }
    } else if start > stop {
        (start - stop + (-step_wide) - 1) / (-step_wide)
    } else {
        0
    };
    Selected::Range { start: start.max(0) as u64, step, len: len as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str, shape: &[u64]) -> Vec<Vec<u64>> {
        let sel = Slice::parse(text).unwrap().apply(shape).unwrap();
        sel.iter()
            .map(|s| match s {
                Selected::Index(i) => vec![*i],
                Selected::Range { len, .. } => (0..*len).map(|i| s.at(i)).collect(),
            })
            .collect()
    }

    #[test]
    fn python_semantics() {
        assert_eq!(kept("1:3", &[5]), [vec![1, 2]]);
        assert_eq!(kept("::-2", &[5]), [vec![4, 2, 0]]);
        assert_eq!(kept("-2:", &[5]), [vec![3, 4]]);
        assert_eq!(kept("3:1:-1", &[5]), [vec![3, 2]]);
        assert_eq!(kept("-100:100", &[3]), [vec![0, 1, 2]]);
        assert_eq!(kept("5:", &[3]), [Vec::<u64>::new()]);
        assert_eq!(kept("-1,:", &[2, 2]), [vec![1], vec![0, 1]]);
        assert_eq!(kept(":1", &[2, 2]), [vec![0], vec![0, 1]]);
    }

    #[test]
    fn errors_name_the_axis_and_the_bound() {
        let e = Slice::parse("0,7").unwrap().apply(&[2, 4]).unwrap_err().to_string();
        assert!(e.contains("axis 1") && e.contains("index 7") && e.contains("size 4"), "{e}");
        let e = Slice::parse("0,:,:").unwrap().apply(&[2, 4]).unwrap_err().to_string();
        assert!(e.contains("3 axes") && e.contains("has 2"), "{e}");
        assert!(Slice::parse("::0").unwrap_err().to_string().contains("zero"));
        assert!(Slice::parse("1,a").unwrap_err().to_string().contains("axis 1"));
    }
}
