//! Column-oriented result tables, handed to Python as typed arrays.

#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<&'static str>),
    Text(Vec<String>),
}

impl ColumnData {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::U64(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Str(v) => v.len(),
            ColumnData::Text(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table as named columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, ColumnData)>,
}

impl Table {
    pub fn push(&mut self, name: &str, data: ColumnData) {
        debug_assert!(self.columns.is_empty() || self.columns[0].1.len() == data.len());
        self.columns.push((name.to_string(), data));
    }

    pub fn n_rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    pub fn column(&self, name: &str) -> Option<&ColumnData> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    pub fn f64(&self, name: &str) -> Option<&[f64]> {
        match self.column(name)? {
            ColumnData::F64(v) => Some(v),
            _ => None,
        }
    }

    /// Equality bit for bit (NaN equals NaN of the same bits): what determinism means.
    pub fn identical(&self, other: &Table) -> bool {
        self.columns.len() == other.columns.len()
            && self.columns.iter().zip(&other.columns).all(|((na, a), (nb, b))| {
                na == nb
                    && match (a, b) {
                        (ColumnData::F64(x), ColumnData::F64(y)) => {
                            x.len() == y.len()
                                && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
                        }
                        _ => a == b,
                    }
            })
    }

    pub fn u64(&self, name: &str) -> Option<&[u64]> {
        match self.column(name)? {
            ColumnData::U64(v) => Some(v),
            _ => None,
        }
    }
}

/// A growing f64 column whose rows may be missing (NaN) for entities lacking the metric.
#[derive(Default)]
pub struct SparseColumns {
    names: Vec<&'static str>,
    data: Vec<Vec<f64>>,
    rows: usize,
}

impl SparseColumns {
    /// Start a new row; values not set stay NaN.
    pub fn new_row(&mut self) {
        self.rows += 1;
        for col in &mut self.data {
            col.push(f64::NAN);
        }
    }

    pub fn set(&mut self, name: &'static str, value: f64) {
        let i = match self.names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                self.names.push(name);
                self.data.push(vec![f64::NAN; self.rows]);
                self.names.len() - 1
            }
        };
        *self.data[i].last_mut().expect("set before new_row") = value;
    }

    pub fn into_columns(self) -> impl Iterator<Item = (&'static str, Vec<f64>)> {
        self.names.into_iter().zip(self.data)
    }
}
