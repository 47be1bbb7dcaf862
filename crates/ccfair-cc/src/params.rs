//! Parameter tables described once: [`param_table!`](crate::param_table) declares an
//! algorithm's parameter struct (serde, defaults) and, from the same text, the table of its
//! parameters with their types, units and documentation that `ccfair ccas` prints and
//! docs/algorithms.md lists.
//!
//! A field's doc comment is its documentation; its unit is written next to its default:
//!
//! ```
//! ccfair_cc::param_table! {
//!     /// Parameters of a toy algorithm.
//!     #[derive(Clone, Debug, PartialEq)]
//!     pub struct ToyParams {
//!         /// Multiplicative decrease on loss.
//!         pub beta: f64 = 0.5, unit "fraction of cwnd";
//!     }
//! }
//! use ccfair_cc::params::ParamTable;
//! assert_eq!(ToyParams::default().beta, 0.5);
//! assert_eq!(ToyParams::params()[0].unit, "fraction of cwnd");
//! ```

use serde::Serialize;

/// What values a parameter takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Kind {
    /// "integer", "number", "boolean" or "choice".
    pub base: &'static str,
    /// The accepted strings of a "choice" (as written in a spec).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// `null` is accepted: the value then follows another parameter (a variant, a profile).
    pub nullable: bool,
}

impl Kind {
    fn plain(base: &'static str) -> Kind {
        Kind {
            base,
            choices: Vec::new(),
            nullable: false,
        }
    }

    /// Short text for tables: `integer`, `boolean or null`, `paper | genericcc`.
    pub fn describe(&self) -> String {
        let base = if self.choices.is_empty() {
            self.base.to_string()
        } else {
            self.choices.join(" | ")
        };
        if self.nullable {
            format!("{base} or null")
        } else {
            base
        }
    }
}

/// The [`Kind`] of a Rust type used as a parameter.
pub trait ParamKind {
    /// The kind of values this type takes in a spec.
    fn kind() -> Kind;
}

macro_rules! plain_kind {
    ($($ty:ty => $base:literal),* $(,)?) => {
        $(impl ParamKind for $ty {
            fn kind() -> Kind {
                Kind::plain($base)
            }
        })*
    };
}

plain_kind!(u8 => "integer", u32 => "integer", u64 => "integer", f64 => "number", bool => "boolean");

impl<T: ParamKind> ParamKind for Option<T> {
    fn kind() -> Kind {
        Kind {
            nullable: true,
            ..T::kind()
        }
    }
}

/// The [`Kind`] of a choice parameter: an enum whose variants serialise as the strings a
/// spec accepts (taken from serde, so they cannot drift from what parsing accepts).
pub fn choice_kind<T: Serialize>(all: &[T]) -> Kind {
    let choices = all
        .iter()
        .map(|v| match serde_json::to_value(v) {
            Ok(serde_json::Value::String(s)) => s,
            other => format!("{other:?}"),
        })
        .collect();
    Kind {
        base: "choice",
        choices,
        nullable: false,
    }
}

/// Declares an enum a choice parameter: `choice!(Version: Version::Linux618, Version::Linux415);`
/// lists every variant once.
#[macro_export]
macro_rules! choice {
    ($ty:ty : $($variant:expr),+ $(,)?) => {
        impl $crate::params::ParamKind for $ty {
            fn kind() -> $crate::params::Kind {
                $crate::params::choice_kind(&[$($variant),+])
            }
        }
    };
}

/// One parameter of an algorithm, as the metadata export (`ccfair ccas`) shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParamDoc {
    /// The parameter's key in the table (`beta`, `hystart_detect`).
    pub name: &'static str,
    /// What values it takes (integer, number, boolean, a choice), and whether null is allowed.
    pub kind: Kind,
    /// Unit of the value ("" for unitless flags and choices).
    pub unit: &'static str,
    /// The field's doc comment, lines joined by spaces.
    pub doc: String,
}

/// A parameter struct declared with [`param_table!`](crate::param_table).
pub trait ParamTable {
    /// Every parameter, in declaration order (= the order of the normalised table).
    fn params() -> Vec<ParamDoc>;
}

/// A parameter (or option) table that does not parse or check. `key` is the path of the
/// culprit inside the table (`beta`, `rmem[2]`), empty when the table as a whole is wrong;
/// the message does not repeat the key. A check that compares two parameters lists the
/// other one in `related`, so that a caller can blame the one its user wrote.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if key.is_empty() { String::new() } else { format!("{key}: ") })]
pub struct ParamError {
    /// Path of the culprit inside the table (`beta`, `rmem[2]`); empty for the whole table.
    pub key: String,
    /// What is wrong, without the key (the `Display` puts the key in front).
    pub message: String,
    /// Other parameters the failed check compared it with (e.g. `hystart_low_window` for a
    /// `hystart_detect` check).
    pub related: Vec<&'static str>,
}

impl ParamError {
    /// The error of the parameter `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ParamError {
            key: key.into(),
            message: message.into(),
            related: Vec::new(),
        }
    }

    /// The check also depends on the parameter `other`.
    pub fn related_to(mut self, other: &'static str) -> Self {
        self.related.push(other);
        self
    }
}

/// Parse a parameter table (a JSON object; `null` = every default) into `P`, with the path
/// of the offending key in the error: from serde_path_to_error for values of the wrong type
/// or range, from `P`'s declared keys for keys it does not have.
pub fn parse_table<P: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    keys: &[&str],
) -> Result<P, ParamError> {
    let table = match value {
        serde_json::Value::Null => serde_json::Value::Object(Default::default()),
        serde_json::Value::Object(map) => {
            if let Some(unknown) = map.keys().find(|k| !keys.contains(&k.as_str())) {
                // Worded as serde words it (serde_derive's unknown_field error).
                let expected = if keys.is_empty() {
                    "there are no fields".to_string()
                } else {
                    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
                    format!("expected one of {}", quoted.join(", "))
                };
                return Err(ParamError::new(
                    unknown.clone(),
                    format!("unknown field `{unknown}`, {expected}"),
                ));
            }
            value.clone()
        }
        other => {
            return Err(ParamError::new(
                "",
                format!("{other} is not a table of parameters"),
            ))
        }
    };
    serde_path_to_error::deserialize(table).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        ParamError::new(key, e.into_inner().to_string())
    })
}

/// Joins the lines of a doc comment (each `///` line is one string with a leading space).
pub fn join_doc(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}

/// Declares a parameter struct: `#[derive(Serialize, Deserialize)]` with
/// `deny_unknown_fields` and `default`, a `Default` impl from the written defaults, and a
/// [`ParamTable`] impl from the field names, types, units and doc comments.
#[macro_export]
macro_rules! param_table {
    (
        $(#[$smeta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                pub $field:ident : $ty:ty = $default:expr, unit $unit:literal;
            )*
        }
    ) => {
        $(#[$smeta])*
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $crate::params::ParamTable for $name {
            fn params() -> Vec<$crate::params::ParamDoc> {
                vec![$(
                    $crate::params::ParamDoc {
                        name: stringify!($field),
                        kind: <$ty as $crate::params::ParamKind>::kind(),
                        unit: $unit,
                        doc: $crate::params::join_doc(&[$($doc),*]),
                    },
                )*]
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Color {
        Red,
        Green,
    }

    crate::choice!(Color: Color::Red, Color::Green);

    crate::param_table! {
        /// A table for the tests.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Demo {
            /// First line
            /// second line.
            pub gain: f64 = 2.0, unit "x BDP";
            /// Optional.
            pub flag: Option<bool> = None, unit "";
        }
    }

    #[test]
    fn table_lists_fields_in_order_with_kinds_units_and_docs() {
        let p = Demo::params();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].name, "gain");
        assert_eq!(p[0].kind.describe(), "number");
        assert_eq!(p[0].unit, "x BDP");
        assert_eq!(p[0].doc, "First line second line.");
        assert_eq!(p[1].kind.describe(), "boolean or null");
        assert_eq!(Demo::default().gain, 2.0);
        let d: Demo = serde_json::from_str("{}").unwrap();
        assert_eq!(d, Demo::default());
        assert!(serde_json::from_str::<Demo>(r#"{"gian": 1}"#).is_err());
    }

    #[test]
    fn an_unknown_key_is_named_with_the_keys_there_are() {
        let e =
            parse_table::<Demo>(&serde_json::json!({"gian": 1}), &["gain", "flag"]).unwrap_err();
        assert_eq!(e.key, "gian");
        assert_eq!(
            e.message,
            "unknown field `gian`, expected one of `gain`, `flag`"
        );
        let e = parse_table::<Demo>(&serde_json::json!({"gian": 1}), &[]).unwrap_err();
        assert_eq!(e.message, "unknown field `gian`, there are no fields");
    }

    #[test]
    fn choices_come_from_serde() {
        assert_eq!(Color::kind().describe(), "red | green");
        assert_eq!(Option::<Color>::kind().describe(), "red | green or null");
    }
}
