//! What interpreting an object gives: a plan of which part to read as which part of the
//! model's layout (or why the object is unreadable), and the steps every layout's
//! interpretation shares (its parts by name, their elements, the tensor they make).

use super::manifest::{Object, Part, in_part};
use super::types::{Element, Typed};
use crate::error::{Error, Result, Rule};
use crate::model::{DType, Kind, Layout, MetaValue, TensorInfo};

/// How to read one part of the model's layout from one part of the object.
#[derive(Debug, Clone)]
pub struct PartPlan {
    /// The part's role in the model's layout (`data`, `indices`, `scales`...).
    pub role: &'static str,
    pub part: Part,
    pub element: Element,
    /// Index elements (`u32` or `u64`) widened to the `u64` the model's index parts hold.
    pub widen: bool,
}

/// A readable object: what it is, and its parts in the order of its layout's parts.
#[derive(Debug)]
pub struct Plan {
    pub info: TensorInfo,
    pub parts: Vec<PartPlan>,
}

/// An object understood: readable, or why it cannot be read (the file itself is sound).
pub type Interpreted = std::result::Result<Plan, Error>;

/// The parts of `o`, which must be exactly `names` (in any order): in the order of `names`.
pub fn exact_parts<'o>(o: &'o Object, names: &[&str], rule: Rule) -> Result<Vec<&'o Part>> {
    let found: Vec<&Part> = names.iter().filter_map(|n| o.parts.iter().find(|p| p.name == *n)).collect();
    if found.len() != names.len() || o.parts.len() != names.len() {
        let have: Vec<&str> = o.parts.iter().map(|p| p.name.as_str()).collect();
        return Err(Error::invalid(rule, format!("a {} object has the parts {names:?}, not {have:?}", o.layout)));
    }
    Ok(found)
}

/// The element of part `p`; an unknown logical type makes the object unreadable (the outer
/// `Ok(Err)`). A logical type over the wrong storage type was refused with the blobs.
pub fn element(p: &Part) -> Result<std::result::Result<Element, Error>> {
    Ok(match Element::of(p.dtype, p.logical.as_deref())? {
        Typed::Known(e) => Ok(e),
        Typed::Unknown(t) => Err(in_part(
            Error::invalid(Rule::UnknownDType, format!("logical type {t:?} is not one this library reads")),
            &p.name,
        )),
    })
}

/// A tensor of `dtype` and `shape` in `layout`, with the object's attributes less those its
/// layout consumed (`used`); unreadable when the model cannot hold it.
pub fn tensor(o: &Object, dtype: DType, layout: Layout, used: &[&str]) -> Interpreted {
    let info = TensorInfo::new(o.name.clone(), Kind::Tensor, dtype, o.shape.clone(), layout)?;
    let extra: Vec<(String, MetaValue)> =
        o.attributes.iter().filter(|(k, _)| !used.contains(&k.as_str())).cloned().collect();
    Ok(Plan { info: info.with_extra(extra), parts: Vec::new() })
}

/// Read `part` as the model's part `role`, of elements `element`.
pub fn plan(role: &'static str, part: &Part, element: Element) -> PartPlan {
    PartPlan { role, part: part.clone(), element, widen: false }
}
