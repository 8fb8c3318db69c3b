//! An n-d array of formatted elements laid out as numpy's `str` does: nested brackets, rows
//! wrapped at 75 columns with a hanging indent, blank lines between blocks of higher axes,
//! and `...` where a summarised axis leaves elements out.

/// numpy's `linewidth`.
const LINE_WIDTH: usize = 75;
/// numpy's `edgeitems`: elements kept at each end of a summarised axis.
pub(crate) const EDGE_ITEMS: u64 = 3;
/// numpy's `threshold`: arrays of more elements are summarised.
pub(crate) const THRESHOLD: u64 = 1000;
const SUMMARY: &str = "...";

/// The indices of an axis of `len` shown: all, or the edges when the array is summarised and
/// the axis is longer than both edges.
pub(crate) fn shown_indices(len: u64, summarised: bool) -> Vec<u64> {
    if summarised && len > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS).chain(len - EDGE_ITEMS..len).collect()
    } else {
        (0..len).collect()
    }
}

/// Formatted elements in row-major order of `dims` (the shown part of each axis); an axis
/// marked in `cut` had elements left out between its first and last [`EDGE_ITEMS`].
pub(crate) struct Grid<'a> {
    pub(crate) dims: &'a [usize],
    pub(crate) cut: &'a [bool],
    pub(crate) words: &'a [String],
}

impl Grid<'_> {
    /// The array as text (at least one dimension, no zero-length one).
    pub(crate) fn text(&self) -> String {
        self.recurse(0, 0, " ", LINE_WIDTH)
    }

    fn recurse(&self, axis: usize, offset: usize, hanging: &str, width: usize) -> String {
        if axis == self.dims.len() {
            return self.words[offset].clone();
        }
        let next_hanging = format!("{hanging} ");
        let next_width = width.saturating_sub(1);
        let len = self.dims[axis];
        let stride: usize = self.dims[axis + 1..].iter().product();
        let leading = if self.cut[axis] { EDGE_ITEMS as usize } else { len };
        let child = |i: usize| self.recurse(axis + 1, offset + i * stride, &next_hanging, next_width);
        let mut s = String::new();
        if axis + 1 == self.dims.len() {
            let elem_width = width.saturating_sub(1);
            let mut line = hanging.to_string();
            for i in 0..len - 1 {
                extend_line(&mut s, &mut line, &child(i), elem_width, hanging);
                line.push(' ');
                if self.cut[axis] && i + 1 == leading {
                    extend_line(&mut s, &mut line, SUMMARY, elem_width, hanging);
                    line.push(' ');
                }
            }
            extend_line(&mut s, &mut line, &child(len - 1), elem_width, hanging);
            s.push_str(&line);
        } else {
            let line_sep = "\n".repeat(self.dims.len() - axis - 1);
            for i in 0..len - 1 {
                s.push_str(hanging);
                s.push_str(&child(i));
                s.push_str(&line_sep);
                if self.cut[axis] && i + 1 == leading {
                    s.push_str(hanging);
                    s.push_str(SUMMARY);
                    s.push_str(&line_sep);
                }
            }
            s.push_str(hanging);
            s.push_str(&child(len - 1));
        }
        format!("[{}]", &s[hanging.len()..])
    }
}

/// Add `word` to `line`, first moving `line` to `s` and starting a new one when the word would
/// pass `width` (unless the line holds nothing but its indent).
fn extend_line(s: &mut String, line: &mut String, word: &str, width: usize, indent: &str) {
    if line.len() + word.len() > width && line.len() > indent.len() {
        s.push_str(line.trim_end());
        s.push('\n');
        *line = indent.to_string();
    }
    line.push_str(word);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_wrap_and_blocks_are_separated() {
        let words: Vec<String> = (0..30).map(|i| format!("{i:2}")).collect();
        let text = Grid { dims: &[30], cut: &[false], words: &words }.text();
        assert_eq!(
            text,
            "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n 24 25 26 27 28 29]"
        );
        let words: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        let text = Grid { dims: &[2, 2, 2], cut: &[false; 3], words: &words }.text();
        assert_eq!(text, "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
    }

    #[test]
    fn summarised_axes_show_dots() {
        let words: Vec<String> = (0..6).map(|i| i.to_string()).collect();
        let text = Grid { dims: &[6], cut: &[true], words: &words }.text();
        assert_eq!(text, "[0 1 2 ... 3 4 5]");
    }
}
