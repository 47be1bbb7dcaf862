//! Column-oriented result tables, handed to Python as typed arrays.

/// One column's values.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    /// Integers (counters, indices, times in ns).
    U64(Vec<u64>),
    /// Floating point values (NaN: not available).
    F64(Vec<f64>),
    /// Labels from a fixed set (CA states, directions, packet kinds).
    Str(Vec<&'static str>),
    /// Other text (names from the spec).
    Text(Vec<String>),
}

impl ColumnData {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ColumnData::U64(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Str(v) => v.len(),
            ColumnData::Text(v) => v.len(),
        }
    }

    /// No value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table as named columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// The columns in order: (name, values).
    pub columns: Vec<(String, ColumnData)>,
}

impl Table {
    /// Append a column (of the same length as the others).
    pub fn push(&mut self, name: &str, data: ColumnData) {
        debug_assert!(self.columns.is_empty() || self.columns[0].1.len() == data.len());
        self.columns.push((name.to_string(), data));
    }

    /// Number of rows (0 for a table without columns).
    pub fn n_rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&ColumnData> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// The floating-point column called `name` (`None` if absent or of another type).
    pub fn f64(&self, name: &str) -> Option<&[f64]> {
        match self.column(name)? {
            ColumnData::F64(v) => Some(v),
            _ => None,
        }
    }

    /// Equality bit for bit (NaN equals NaN of the same bits): what determinism means.
    pub fn identical(&self, other: &Table) -> bool {
        self.columns.len() == other.columns.len()
            && self
                .columns
                .iter()
                .zip(&other.columns)
                .all(|((na, a), (nb, b))| {
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

    /// A 64-bit digest (FNV-1a) of the column names and every value's bits: two tables with
    /// the same digest are, for a before/after check of engine work, bit-identical
    /// (`run_spec --digest`, benches/README.md).
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for (name, data) in &self.columns {
            eat(name.as_bytes());
            match data {
                ColumnData::U64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
                ColumnData::F64(v) => v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes())),
                ColumnData::Str(v) => v.iter().for_each(|s| {
                    eat(s.as_bytes());
                    eat(&[0]);
                }),
                ColumnData::Text(v) => v.iter().for_each(|s| {
                    eat(s.as_bytes());
                    eat(&[0]);
                }),
            }
            // Column boundaries are part of the content (string ends are the 0 above).
            eat(&[0xff]);
        }
        h
    }

    /// The integer column called `name` (`None` if absent or of another type).
    pub fn u64(&self, name: &str) -> Option<&[u64]> {
        match self.column(name)? {
            ColumnData::U64(v) => Some(v),
            _ => None,
        }
    }
}
