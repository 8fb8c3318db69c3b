//! Other file attributes for a zTensor 2 file: the manifest with its `attributes` map
//! replaced (left out when empty, as the writer leaves it out), encoded deterministically
//! (spec §6.3) at the offset of the old manifest blob, then a new footer. Every blob before the
//! manifest is copied byte for byte, so tensor data, digests and shard references stay valid.
//! A manifest that is not in the deterministic encoding is refused rather than rewritten in
//! another form: its decoded value would be re-encoded, and the file would change in more
//! than its attributes.

use super::canonical::{self, Cbor, MAX_MANIFEST};
use super::footer;
use super::read::{Flavor, Zt2Reader};
use crate::error::{Error, Result, Rule};
use crate::formats::ztensor::cbor;
use crate::formats::{MetaEdits, Output};
use crate::model::MetaValue;
use crate::output::copy_range;

/// The manifest's key of the file attributes.
const ATTRIBUTES: &str = "attributes";

/// The unit's metadata editor.
pub(crate) fn edit(input: &MetaEdits<'_>, out: &mut dyn Output) -> Result<()> {
    let reader = input.file_as::<Zt2Reader>().ok_or_else(|| Error::usage("this edit is for zTensor 2 files"))?;
    let Flavor::V2(Some(blob)) = reader.flavor() else {
        return Err(Error::usage("a zTensor 2 data shard has no manifest: edit the attributes of its root file"));
    };
    let src = reader.source();
    let raw = src.range(blob.offset, blob.len)?;
    let manifest = cbor::decode(&raw)?;
    let MetaValue::Map(root) = &manifest else {
        return Err(Error::invalid(Rule::BadMetadata, "the manifest is not a map"));
    };
    if Cbor::from_meta(&manifest)?.encode("the manifest")?.as_slice() != &raw[..] {
        return Err(Error::unsupported(
            "its manifest is not in the deterministic encoding (spec §6.3) that an edit writes: \
             convert the file to rewrite it whole",
        ));
    }
    let mut attributes = Vec::with_capacity(input.metadata.len());
    for (key, value) in input.metadata {
        canonical::check_name("file attribute key", key)?;
        attributes.push((key.clone(), Cbor::from_meta(value)?));
    }
    let mut pairs = Vec::with_capacity(root.len() + 1);
    for (key, value) in root {
        if !matches!(key, MetaValue::Text(k) if k == ATTRIBUTES) {
            pairs.push((Cbor::from_meta(key)?, Cbor::from_meta(value)?));
        }
    }
    if !attributes.is_empty() {
        pairs.push((Cbor::text(ATTRIBUTES), Cbor::map(attributes)));
    }
    let encoded = Cbor::Map(pairs).encode("the manifest")?;
    if encoded.len() as u64 > MAX_MANIFEST {
        return Err(Error::unsupported(format!(
            "a manifest of {} bytes, more than zTensor 2 readers accept (1 GiB)",
            encoded.len()
        )));
    }
    copy_range(src, 0, blob.offset, out)?;
    out.write_all(&encoded)?;
    out.write_all(&footer::for_manifest(blob.offset, &encoded))?;
    Ok(())
}
