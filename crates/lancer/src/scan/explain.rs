//! A scan's plan as text, in the operator names pylance 14's `explain_plan` and
//! `analyze_plan` print (users check for them: `LanceRead`, `ScalarIndexQuery`,
//! `ProjectionExec`, `GlobalLimitExec`, and the metrics `output_rows`, `rows_scanned`,
//! `bytes_read`, `iops`), each line carrying Lancer's own facts as extra attributes
//! (fragments and rows left to read, tasks, whether an index answer is exact). The
//! layout of the tree follows pylance's; it is not DataFusion's plan, which Lancer does
//! not build for a scan.

use std::fmt::Write as _;

use super::{Output, Plan, Scanner, Task};
use crate::{Dataset, Result};

/// `uri=` as pylance prints it: the dataset's data directory, without a leading `/`.
pub(crate) fn data_uri(ds: &Dataset) -> String {
    let root = ds.root().display().to_string();
    format!(
        "{}/data",
        root.trim_start_matches('/').trim_end_matches('/')
    )
}

/// A `LanceRead` line of a fragment scan.
pub(crate) fn lance_read(
    ds: &Dataset,
    projection: &[String],
    fragments: usize,
    (row_id, row_addr): (bool, bool),
    (full, refine): (Option<&str>, Option<&str>),
) -> String {
    format!(
        "LanceRead: uri={}, projection=[{}], num_fragments={fragments}, range_before=None, \
         range_after=None, row_id={row_id}, row_addr={row_addr}, full_filter={}, refine_filter={}",
        data_uri(ds),
        projection.join(", "),
        full.unwrap_or("--"),
        refine.unwrap_or("--"),
    )
}

/// What a run of the plan cost: rows returned, and the session's storage counters'
/// difference over the run.
struct Ran {
    rows: u64,
    elapsed: std::time::Duration,
    bytes_read: u64,
    requests: u64,
}

impl Scanner {
    /// How the scan would run, as pylance's `explain_plan` prints it: the projection,
    /// the `LanceRead` of the fragments (columns read, filter, what is left to recheck),
    /// the `ScalarIndexQuery` that answered part of the filter (pylance's notation:
    /// `[id = Int64(5)]@id_idx(BTree)`), the limit; plus Lancer's counts of fragments,
    /// rows and tasks left to read. Nothing is read but metadata and index answers.
    pub fn explain(&self) -> Result<String> {
        let plan = self.plan()?;
        Ok(self.tree(&plan, None))
    }

    /// The scan run once, then its plan with what the run cost, as pylance's
    /// `analyze_plan` prints it: `output_rows`, `fragments_scanned`, `rows_scanned`,
    /// `bytes_read`, `iops` / `requests` (the storage reads of the dataset's session
    /// during the run) and the time it took.
    pub fn analyze(&self) -> Result<String> {
        let plan = self.plan()?;
        let ctx = self.ds.store().context().clone();
        let before = ctx.stats();
        let started = std::time::Instant::now();
        let mut rows = 0u64;
        for b in self.stream()? {
            rows += b?.num_rows() as u64;
        }
        let elapsed = started.elapsed();
        let cost = ctx.stats().since(&before);
        let ran = Ran {
            rows,
            elapsed,
            bytes_read: cost.bytes_read,
            requests: cost.requests(),
        };
        let mut out = format!(
            "AnalyzeExec verbose=true, elapsed={:?}, metrics=[]\n",
            ran.elapsed
        );
        for line in self.tree(&plan, Some(&ran)).lines() {
            let _ = writeln!(out, "  {line}");
        }
        Ok(out)
    }

    fn tree(&self, plan: &Plan, ran: Option<&Ran>) -> String {
        let mut lines: Vec<String> = Vec::new();
        let frags = self.ds.fragments().len();
        let rows: u64 = plan.tasks.iter().map(Task::rows).sum();
        let read_frags = {
            let mut f: Vec<usize> = plan.tasks.iter().map(|t| t.frag).collect();
            f.dedup();
            f.len()
        };
        if self.limit.is_some() || self.offset > 0 {
            lines.push(format!(
                "GlobalLimitExec: skip={}, fetch={}",
                self.offset,
                self.limit
                    .map_or_else(|| "None".to_string(), |l| l.to_string())
            ));
        }
        let outputs: Vec<String> = plan
            .outputs
            .iter()
            .map(|o| o.field().name().clone())
            .collect();
        let computed = plan
            .outputs
            .iter()
            .any(|o| matches!(o, Output::Computed(..)));
        if computed || plan.read != plan.out_read {
            let exprs: Vec<String> = plan
                .outputs
                .iter()
                .enumerate()
                .map(|(i, o)| match o {
                    Output::Computed(n, e) => format!("{} as {n}", e.sql()),
                    _ => format!("{}@{i} as {}", outputs[i], outputs[i]),
                })
                .collect();
            lines.push(format!("ProjectionExec: expr=[{}]", exprs.join(", ")));
        }
        let filter = plan.filter.as_ref().map(|f| f.sql());
        let exact = plan.indexed.as_ref().is_some_and(|ix| ix.exact);
        let refine = if exact { None } else { filter };
        let mut read = lance_read(
            &self.ds,
            &plan.read,
            read_frags,
            (self.with_row_id, self.with_row_address),
            (filter, refine),
        );
        let _ = write!(
            read,
            ", fragments_in_version={frags}, rows_planned={rows}, tasks={}",
            plan.tasks.len()
        );
        if let Some(r) = ran {
            let _ = write!(
                read,
                ", metrics=[output_rows={}, fragments_scanned={read_frags}, ranges_scanned={}, \
                 rows_scanned={rows}, bytes_read={}, iops={}, requests={}, elapsed={:?}]",
                r.rows,
                plan.tasks.len(),
                r.bytes_read,
                r.requests,
                r.requests,
                r.elapsed
            );
        }
        lines.push(read);
        if let Some(ix) = &plan.indexed {
            lines.push(format!(
                "ScalarIndexQuery: query={}, exact={}, fragments_covered={} of {frags}, rows={}",
                ix.explain,
                ix.exact,
                ix.covered.len(),
                ix.rows.len()
            ));
        }
        let mut out = String::new();
        for (depth, line) in lines.iter().enumerate() {
            let _ = writeln!(out, "{}{line}", "  ".repeat(depth));
        }
        out
    }
}
