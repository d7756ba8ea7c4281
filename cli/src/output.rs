//! `-o table|json|yaml`. Tables are kubectl's: upper-case headers, columns padded with
//! three spaces, nothing but the data.

use clap::ValueEnum;
use serde::Serialize;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Json,
    Yaml,
}

/// Rows that can be shown as a table or serialized as structured data.
pub trait Tabular: Serialize {
    fn headers() -> &'static [&'static str];
    fn cells(&self) -> Vec<String>;
}

pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            out.push_str(cell);
            if i < last {
                let pad = widths[i] - cell.chars().count() + 3;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[derive(Serialize)]
struct Items<'a, T> {
    items: &'a [T],
}

/// The rows in `format`; JSON and YAML give `{"items": [...]}` like kubectl's lists.
pub fn render<T: Tabular>(rows: &[T], format: Format) -> Result<String> {
    match format {
        Format::Table => Ok(table(
            T::headers(),
            &rows.iter().map(Tabular::cells).collect::<Vec<_>>(),
        )),
        Format::Json | Format::Yaml => structured(&Items { items: rows }, format),
    }
}

/// One value as JSON or YAML (a table has no meaning for a lone object).
pub fn structured<T: Serialize>(value: &T, format: Format) -> Result<String> {
    let text = match format {
        Format::Yaml => serde_yaml_ng::to_string(value).map_err(|e| e.to_string()),
        _ => serde_json::to_string_pretty(value)
            .map(|s| s + "\n")
            .map_err(|e| e.to_string()),
    };
    text.map_err(|e| Error::Failed(format!("cannot serialize the output: {e}")))
}

/// `-` for an absent value, as kubectl prints `<none>` but shorter.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_every_column_but_the_last() {
        let rows = vec![
            vec!["a".to_string(), "longer".to_string(), "x".to_string()],
            vec![
                "bbbb".to_string(),
                "".to_string(),
                "last column".to_string(),
            ],
        ];
        assert_eq!(
            table(&["NAME", "V", "MESSAGE"], &rows),
            "NAME   V        MESSAGE\n\
             a      longer   x\n\
             bbbb            last column\n"
        );
        assert_eq!(table(&["NAME"], &[]), "NAME\n");
    }

    #[test]
    fn dashes_for_absent_values() {
        assert_eq!(or_dash(None::<u32>), "-");
        assert_eq!(or_dash(Some(3)), "3");
    }
}
