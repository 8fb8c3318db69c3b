//! AOTInductor packages: the target a model was compiled for, and the weights it keeps on
//! disk beside its shared library.

use serde_json::{Value as Json, json};

use super::read::{Pt2Reader, Pt2Tensor, TensorSource};
use crate::error::{Error, Result, Rule};
use crate::formats::FormatReader;
use crate::formats::pytorch::View;
use crate::formats::pytorch::pt::StorageSource;
use crate::model::{Entry, Kind, TensorInfo};

impl Pt2Reader {
    /// AOTInductor's weights stored on disk (`package_constants_on_disk_format` =
    /// `pickle_weights`): `weights_config.json` maps each name to `[record, sizes, strides,
    /// storage offset]`, a view of the storage of the tensor saved in `data/weights/<record>`.
    pub(super) fn add_aoti_weights(&mut self, model: &str, prefix: &str, text: &str) -> Result<()> {
        let config: Json = serde_json::from_str(text)
            .map_err(|e| Error::invalid(Rule::BadJson, format!("data/aotinductor/{model}/weights_config.json: {e}")))?;
        let map = config.as_object().ok_or_else(|| {
            Error::invalid(Rule::BadField, format!("data/aotinductor/{model}/weights_config.json is not an object"))
        })?;
        for (fqn, spec) in map {
            match self.aoti_weight(spec) {
                Ok((nested, e, view)) => {
                    let t = Pt2Tensor {
                        model: model.into(),
                        fqn: fqn.clone(),
                        kind: "weight",
                        source: TensorSource::Pickled { nested, index: 0, view: Some(view) },
                    };
                    let e = e.with_name(fqn.clone());
                    self.push(prefix, t, e);
                }
                Err(error) => self.unreadable(format!("{prefix}{fqn}"), error),
            }
        }
        Ok(())
    }

    fn aoti_weight(&mut self, spec: &Json) -> Result<(usize, Entry, View)> {
        let bad = |what: &str| Error::invalid(Rule::BadField, format!("weights_config entry: {what}"));
        let parts =
            spec.as_array().filter(|a| a.len() == 4).ok_or_else(|| bad("not [record, sizes, strides, offset]"))?;
        let record = parts[0].as_str().filter(|r| !r.contains('/')).ok_or_else(|| bad("record is not a name"))?;
        let numbers = |v: &Json, what: &str| -> Result<Vec<u64>> {
            v.as_array().ok_or_else(|| bad(what))?.iter().map(|x| x.as_u64().ok_or_else(|| bad(what))).collect()
        };
        let shape = numbers(&parts[1], "sizes")?;
        let strides = numbers(&parts[2], "strides")?;
        let storage_offset = parts[3].as_u64().ok_or_else(|| bad("storage offset"))?;
        if shape.len() != strides.len() {
            return Err(bad("sizes and strides differ in length"));
        }
        let nested = self.open_nested(&format!("data/weights/{record}"))?;
        let reader = &self.nested[nested].1;
        let saved = reader
            .tensors()
            .first()
            .ok_or_else(|| Error::invalid(Rule::MissingField, format!("data/weights/{record} holds no tensor")))?;
        let view = View { dtype: saved.view.dtype, shape, strides, storage_offset };
        let storage_bytes = match &saved.storage {
            StorageSource::Record(r) => r.size,
            StorageSource::Raw { len, .. } => *len,
        };
        view.check_within(storage_bytes)?;
        let info = TensorInfo::new(String::new(), Kind::Tensor, view.dtype, view.shape.clone(), view.layout())?;
        let nbytes = info.nbytes()?;
        let stored = reader.entries()[0].storage().clone().with_len(nbytes);
        Ok((nested, Entry::new(info, stored)?, view))
    }

    /// The target of an AOTInductor model: the wrapper's metadata JSON (device, platform,
    /// CPU ISA...), and how many weights it keeps on disk.
    pub(super) fn aoti_metadata(&self, name: &str) -> Option<Json> {
        let records = self.archive.records_under(&format!("data/aotinductor/{name}/"));
        if records.is_empty() {
            return None;
        }
        let metadata = records
            .iter()
            .find(|r| r.ends_with("wrapper_metadata.json"))
            .or_else(|| records.iter().find(|r| r.ends_with("_metadata.json")))
            .and_then(|r| self.archive.read_text(r).ok().flatten())
            .and_then(|t| serde_json::from_str::<Json>(&t).ok())
            .unwrap_or(Json::Null);
        let on_disk = self.tensors.iter().filter(|t| t.model == name && t.kind == "weight").count();
        Some(json!({ "metadata": metadata, "weights_on_disk": on_disk }))
    }
}
