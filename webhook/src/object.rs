//! The parts of an admitted object that the admission decisions read, as typed fields.
//!
//! Decoded straight from the review's body (`review.rs` hands over the raw `metadata`):
//! only the fields a decision reads are stored, everything else in the metadata
//! (`managedFields` above all, which can be the bulk of a real object) is skipped unstored.
//!
//! Every field is decoded leniently: a field of an unexpected shape reads as absent, as it
//! did when the decisions looked fields up in a `serde_json::Value`, so no object that is a
//! JSON object makes the review fail to parse (`tests/parse_props.rs`). The API server
//! sends only well-formed metadata; leniency is for whatever else reaches the port.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// What the decisions read of an admitted object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdmittedObject {
    pub metadata: ObjectMetadata,
    /// lifeguard's own kinds only: the whole `spec`, which validation decodes into the
    /// kind's spec type (`lifeguard_api::validation`).
    pub spec: Option<Value>,
    /// Pods only: `spec.affinity`, which steering extends (`steer.rs`).
    pub affinity: Option<Value>,
}

impl AdmittedObject {
    /// The object as `lifeguard_api::validation`'s object checks read it: its name, its
    /// annotations (the postpone request) and its spec.
    pub fn validation_view(&self) -> Value {
        let mut metadata = serde_json::Map::new();
        if let Some(name) = &self.metadata.name {
            metadata.insert("name".into(), Value::from(name.as_str()));
        }
        if !self.metadata.annotations.is_empty() {
            let annotations = self
                .metadata
                .annotations
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            metadata.insert("annotations".into(), Value::Object(annotations));
        }
        let mut object = serde_json::Map::new();
        object.insert("metadata".into(), Value::Object(metadata));
        if let Some(spec) = &self.spec {
            object.insert("spec".into(), spec.clone());
        }
        Value::Object(object)
    }
}

/// An object's metadata, of it only what a decision reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectMetadata {
    pub name: Option<String>,
    /// Labels with string values (a label of another type is left out).
    pub labels: BTreeMap<String, String>,
    /// Annotations with string values.
    pub annotations: BTreeMap<String, String>,
    pub finalizers: Finalizers,
    pub owner_references: Vec<OwnerReference>,
    /// `deletionTimestamp` is set (present and not null).
    pub deleting: bool,
}

/// `metadata.finalizers`, as the finalizer stamp needs to tell them apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Finalizers {
    /// Absent or null.
    #[default]
    Absent,
    /// A list; entries that are not strings are left out.
    List(Vec<String>),
    /// Something else, which the API server refuses anyway.
    NotAList,
}

/// Of an owner reference, what tells a Workspace owner.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnerReference {
    pub api_version: Option<String>,
    pub kind: Option<String>,
}

/// A metadata key: one a decision reads, or any other (matched without allocating).
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum MetadataField {
    Name,
    Labels,
    Annotations,
    Finalizers,
    OwnerReferences,
    DeletionTimestamp,
    #[serde(other)]
    Unread,
}

/// The visitor's value for booleans and numbers, which no field read here holds.
macro_rules! other_shapes_read_as {
    ($default:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($default)
        }
    };
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A string, or `None` for any other JSON value.
struct MaybeString(Option<String>);

impl<'de> Deserialize<'de> for MaybeString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            other_shapes_read_as!(MaybeString(None));
            fn visit_unit<E: serde::de::Error>(self) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MaybeString, E> {
                Ok(MaybeString(Some(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<MaybeString, E> {
                Ok(MaybeString(Some(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MaybeString, A::Error> {
                drain_seq(seq).map(|()| MaybeString(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaybeString, A::Error> {
                drain_map(map).map(|()| MaybeString(None))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A map's string entries; empty for anything that is not a map. A key repeated with a
/// value that is not a string is left out, as the last of a repeated key counts.
struct StringMap(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            other_shapes_read_as!(StringMap(BTreeMap::new()));
            fn visit_unit<E: serde::de::Error>(self) -> Result<StringMap, E> {
                Ok(StringMap(BTreeMap::new()))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<StringMap, E> {
                Ok(StringMap(BTreeMap::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<StringMap, A::Error> {
                drain_seq(seq).map(|()| StringMap(BTreeMap::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringMap, A::Error> {
                let mut entries = BTreeMap::new();
                while let Some((key, MaybeString(value))) =
                    map.next_entry::<String, MaybeString>()?
                {
                    match value {
                        Some(value) => entries.insert(key, value),
                        None => entries.remove(&key),
                    };
                }
                Ok(StringMap(entries))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Finalizers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Finalizers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            other_shapes_read_as!(Finalizers::NotAList);
            fn visit_unit<E: serde::de::Error>(self) -> Result<Finalizers, E> {
                Ok(Finalizers::Absent)
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Finalizers, E> {
                Ok(Finalizers::NotAList)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Finalizers, A::Error> {
                drain_map(map).map(|()| Finalizers::NotAList)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Finalizers, A::Error> {
                let mut list = Vec::new();
                while let Some(MaybeString(entry)) = seq.next_element::<MaybeString>()? {
                    list.extend(entry);
                }
                Ok(Finalizers::List(list))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// An owner reference; anything that is not a JSON object reads as one with no fields.
impl<'de> Deserialize<'de> for OwnerReference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "camelCase")]
        enum Field {
            ApiVersion,
            Kind,
            #[serde(other)]
            Unread,
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OwnerReference;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            other_shapes_read_as!(OwnerReference::default());
            fn visit_unit<E: serde::de::Error>(self) -> Result<OwnerReference, E> {
                Ok(OwnerReference::default())
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<OwnerReference, E> {
                Ok(OwnerReference::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OwnerReference, A::Error> {
                drain_seq(seq).map(|()| OwnerReference::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OwnerReference, A::Error> {
                let mut owner = OwnerReference::default();
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::ApiVersion => owner.api_version = map.next_value::<MaybeString>()?.0,
                        Field::Kind => owner.kind = map.next_value::<MaybeString>()?.0,
                        Field::Unread => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(owner)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A list of owner references; empty for anything that is not a list.
struct OwnerReferences(Vec<OwnerReference>);

impl<'de> Deserialize<'de> for OwnerReferences {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OwnerReferences;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            other_shapes_read_as!(OwnerReferences(Vec::new()));
            fn visit_unit<E: serde::de::Error>(self) -> Result<OwnerReferences, E> {
                Ok(OwnerReferences(Vec::new()))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<OwnerReferences, E> {
                Ok(OwnerReferences(Vec::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OwnerReferences, A::Error> {
                drain_map(map).map(|()| OwnerReferences(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OwnerReferences, A::Error> {
                let mut owners = Vec::new();
                while let Some(owner) = seq.next_element::<OwnerReference>()? {
                    owners.push(owner);
                }
                Ok(OwnerReferences(owners))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ObjectMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ObjectMetadata;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("object metadata")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectMetadata, A::Error> {
                let mut metadata = ObjectMetadata::default();
                while let Some(field) = map.next_key::<MetadataField>()? {
                    match field {
                        MetadataField::Name => metadata.name = map.next_value::<MaybeString>()?.0,
                        MetadataField::Labels => {
                            metadata.labels = map.next_value::<StringMap>()?.0;
                        }
                        MetadataField::Annotations => {
                            metadata.annotations = map.next_value::<StringMap>()?.0;
                        }
                        MetadataField::Finalizers => metadata.finalizers = map.next_value()?,
                        MetadataField::OwnerReferences => {
                            metadata.owner_references = map.next_value::<OwnerReferences>()?.0;
                        }
                        MetadataField::DeletionTimestamp => {
                            metadata.deleting = map.next_value::<Option<IgnoredAny>>()?.is_some();
                        }
                        MetadataField::Unread => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(metadata)
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;
