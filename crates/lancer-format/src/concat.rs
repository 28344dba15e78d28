//! Joining arrays decoded from several pages or files.
//!
//! Arrow's `concat` merges the dictionaries of dictionary-encoded pieces by appending
//! them (it deduplicates only when that looks worthwhile), so pieces whose dictionaries
//! together hold more entries than the key type counts fail to join even when their
//! distinct values fit (a `dictionary<int8, string>` column of 30 pages or fragments,
//! each with its own 10-value dictionary). [`concat`] joins such pieces by value and
//! encodes them again with one deduplicated dictionary; only more distinct values than
//! the key type can count is an error, naming the type.

use arrow_array::{Array, ArrayRef};
use arrow_schema::{ArrowError, DataType};

/// `parts` as one array (see the module docs for dictionaries).
pub fn concat(parts: &[&dyn Array]) -> Result<ArrayRef, ArrowError> {
    match arrow_select::concat::concat(parts) {
        Ok(a) => Ok(a),
        Err(e) => {
            let Some(first) = parts.first() else {
                return Err(e);
            };
            let DataType::Dictionary(_, values) = first.data_type() else {
                return Err(e);
            };
            let decoded = parts
                .iter()
                .map(|p| arrow_cast::cast(*p, values))
                .collect::<Result<Vec<_>, _>>()?;
            let refs: Vec<&dyn Array> = decoded.iter().map(|a| a.as_ref()).collect();
            let joined = arrow_select::concat::concat(&refs)?;
            arrow_cast::cast(&joined, first.data_type()).map_err(|why| {
                ArrowError::InvalidArgumentError(format!(
                    "the values do not fit one {} array ({why}): read them in smaller \
                     batches, or store the column with a wider dictionary key",
                    first.data_type()
                ))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int8Type;
    use arrow_array::DictionaryArray;

    #[test]
    fn dictionaries_join_by_value() -> Result<(), ArrowError> {
        // 20 pieces of the same 10 values: 200 dictionary entries, 10 distinct
        let names: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
        let piece: DictionaryArray<Int8Type> = names.iter().map(String::as_str).collect();
        let pieces: Vec<&dyn Array> = (0..20).map(|_| &piece as &dyn Array).collect();
        let joined = concat(&pieces)?;
        assert_eq!(joined.len(), 200);
        assert_eq!(joined.data_type(), piece.data_type());
        // 200 distinct values cannot have int8 keys: an error, not a panic
        let wide: Vec<DictionaryArray<Int8Type>> = (0..20)
            .map(|p| {
                let names: Vec<String> = (0..10).map(|i| format!("v{p}-{i}")).collect();
                names.iter().map(String::as_str).collect()
            })
            .collect();
        let refs: Vec<&dyn Array> = wide.iter().map(|a| a as &dyn Array).collect();
        assert!(concat(&refs).is_err());
        Ok(())
    }
}
