//! `array_has_any` / `array_has_all` with NULL among the values sought, as the
//! reference answers them: a NULL in the needle list matches a list holding a null
//! element (`array_has_any(tags, [NULL])` selects the lists with a null inside), where
//! DataFusion's functions never match a NULL. [`null_needles`] rewrites such calls into
//! the call without the NULLs combined with [`ListHasNull`] (OR for `any`, AND for
//! `all`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, OffsetSizeTrait};
use arrow_schema::DataType;
use datafusion_common::tree_node::{Transformed, TreeNode};
use datafusion_common::{exec_err, Result};
use datafusion_expr::expr::ScalarFunction;
use datafusion_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// `lancer_list_has_null(list)`: whether a list holds a null element (null for a null
/// list).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ListHasNull {
    signature: Signature,
}

impl ListHasNull {
    fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

fn has_null_offsets<O: OffsetSizeTrait>(list: &arrow_array::GenericListArray<O>) -> BooleanArray {
    let values = list.values();
    (0..list.len())
        .map(|i| {
            list.is_valid(i).then(|| {
                let (a, b) = (list.value_offsets()[i], list.value_offsets()[i + 1]);
                (a.as_usize()..b.as_usize()).any(|k| values.is_null(k))
            })
        })
        .collect()
}

impl ScalarUDFImpl for ListHasNull {
    fn name(&self) -> &str {
        "lancer_list_has_null"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("lancer_list_has_null takes one list");
        };
        let a: ArrayRef = arg.clone().into_array(args.number_rows)?;
        let out = match a.data_type() {
            DataType::List(_) => has_null_offsets(a.as_list::<i32>()),
            DataType::LargeList(_) => has_null_offsets(a.as_list::<i64>()),
            DataType::FixedSizeList(_, n) => {
                let l = a.as_fixed_size_list();
                let n = usize::try_from(*n).unwrap_or(0);
                (0..l.len())
                    .map(|i| {
                        l.is_valid(i)
                            .then(|| (i * n..(i + 1) * n).any(|k| l.values().is_null(k)))
                    })
                    .collect()
            }
            DataType::Null => BooleanArray::new_null(a.len()),
            other => return exec_err!("lancer_list_has_null takes a list, not {other}"),
        };
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

fn is_null_literal(e: &Expr) -> bool {
    matches!(e, Expr::Literal(v, _) if v.is_null())
}

/// Rewrites `array_has_any(l, [.., NULL, ..])` as `array_has_any(l, [..]) OR
/// lancer_list_has_null(l)` and `array_has_all` likewise with AND (see module docs).
pub(crate) fn null_needles(expr: Expr) -> Result<Expr> {
    let has_null = Arc::new(ScalarUDF::from(ListHasNull::new()));
    expr.transform_up(|e| {
        let Expr::ScalarFunction(f) = &e else {
            return Ok(Transformed::no(e));
        };
        let any = match f.name() {
            "array_has_any" => true,
            "array_has_all" => false,
            _ => return Ok(Transformed::no(e)),
        };
        let [list, Expr::ScalarFunction(needles)] = f.args.as_slice() else {
            return Ok(Transformed::no(e));
        };
        if needles.name() != "make_array" || !needles.args.iter().any(is_null_literal) {
            return Ok(Transformed::no(e));
        }
        let kept: Vec<Expr> = needles
            .args
            .iter()
            .filter(|a| !is_null_literal(a))
            .cloned()
            .collect();
        let without = Expr::ScalarFunction(ScalarFunction::new_udf(
            f.func.clone(),
            vec![
                list.clone(),
                Expr::ScalarFunction(ScalarFunction::new_udf(needles.func.clone(), kept)),
            ],
        ));
        let nulls = Expr::ScalarFunction(ScalarFunction::new_udf(
            has_null.clone(),
            vec![list.clone()],
        ));
        Ok(Transformed::yes(if any {
            without.or(nulls)
        } else {
            without.and(nulls)
        }))
    })
    .map(|t| t.data)
}
