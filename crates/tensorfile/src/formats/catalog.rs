//! What a reader found in a file's index, kept the same way by every reader: the entries it
//! can read, in file order, and those it cannot, each with its reason (one bad entry does not
//! hide the others).

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ENTRIES;
use crate::model::{Entry, Unreadable};

/// The entries of an opened file.
#[derive(Debug, Default)]
pub struct Catalog {
    entries: Vec<Entry>,
    unreadable: Vec<Unreadable>,
}

impl Catalog {
    /// Refuse a file that declares more entries than the library's limit.
    pub(crate) fn check_count(count: u64) -> Result<()> {
        if count > MAX_ENTRIES as u64 {
            return Err(Error::invalid(Rule::TooManyEntries, format!("{count} entries (limit {MAX_ENTRIES})")));
        }
        Ok(())
    }

    /// A readable entry, after those already found.
    pub(crate) fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// An entry the file declares but that cannot be read: its name, its dtype and shape as
    /// the file gives them (empty when unknown), and why.
    pub(crate) fn push_unreadable(&mut self, name: String, dtype: String, shape: Vec<u64>, error: Error) {
        self.unreadable.push(Unreadable::new(name, dtype, shape, error));
    }

    /// The readable entries, to adjust what the reader found first (offsets of a file nested
    /// in another).
    pub(crate) fn entries_mut(&mut self) -> &mut [Entry] {
        &mut self.entries
    }

    /// The readable entries, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries that cannot be read.
    pub fn unreadable(&self) -> &[Unreadable] {
        &self.unreadable
    }

    /// Entry `index`, or a usage error when there is none.
    pub fn get(&self, index: usize) -> Result<&Entry> {
        self.entries.get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))
    }
}

impl From<(Vec<Entry>, Vec<Unreadable>)> for Catalog {
    /// A catalog of entries found by a reader that builds them in one pass.
    fn from((entries, unreadable): (Vec<Entry>, Vec<Unreadable>)) -> Self {
        Catalog { entries, unreadable }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Storage, TensorInfo};

    #[test]
    fn a_count_past_the_limit_is_refused() {
        assert!(Catalog::check_count(MAX_ENTRIES as u64).is_ok());
        let err = Catalog::check_count(MAX_ENTRIES as u64 + 1).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::TooManyEntries));
    }

    #[test]
    fn entries_are_found_by_index_and_an_index_past_the_end_is_an_error() {
        let mut c = Catalog::default();
        let info = TensorInfo::blob("a", 3);
        c.push(Entry::new(info, Storage::new(0, 3)).unwrap());
        c.push_unreadable("b".into(), "Q9".into(), vec![2], Error::invalid(Rule::UnknownDType, "Q9"));
        assert_eq!(c.get(0).unwrap().info().name(), "a");
        assert!(matches!(c.get(1).unwrap_err().kind(), crate::ErrorKind::Usage(_)));
        assert_eq!(c.unreadable()[0].name(), "b");
    }
}
