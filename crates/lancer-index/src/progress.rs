//! Progress of an index build, as events a caller can show: a stage starts, advances
//! and completes, counting its work in a unit (`rows`, `iterations`, `partitions`,
//! `files`) against a total when one is known. Stage names and units are the
//! reference's (pylance's `IndexProgress`): vector builds report `train_ivf`,
//! `train_quantizer`, `shuffle` and `merge_partitions`; scalar builds `load_data`;
//! full-text builds `load_data`, `tokenize_docs`, `copy_partitions` and
//! `write_metadata`.

use std::sync::Arc;

/// What happened to a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The stage began.
    Start,
    /// More of its work is done.
    Progress,
    /// It ended.
    Complete,
}

impl Event {
    /// The reference's name: `start`, `progress`, `complete`.
    pub fn name(self) -> &'static str {
        match self {
            Event::Start => "start",
            Event::Progress => "progress",
            Event::Complete => "complete",
        }
    }
}

/// One progress event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressEvent<'a> {
    /// What happened.
    pub event: Event,
    /// The stage (see the module docs).
    pub stage: &'a str,
    /// Work done so far.
    pub completed: u64,
    /// The stage's whole work, when known.
    pub total: Option<u64>,
    /// What `completed` and `total` count (empty when nothing is counted).
    pub unit: &'a str,
}

/// Told every event of a build (from the building thread; keep it quick).
pub type Progress = Arc<dyn Fn(&ProgressEvent<'_>) + Send + Sync>;

/// A stage under way: emits its start when made, [`Stage::advance`] /
/// [`Stage::to`] as work is done, and its completion on [`Stage::complete`]. Without a
/// listener it does nothing.
pub struct Stage {
    progress: Option<Progress>,
    stage: &'static str,
    unit: &'static str,
    total: Option<u64>,
    completed: u64,
}

impl Stage {
    /// Starts `stage` (counting `unit`s out of `total`).
    pub fn start(
        progress: Option<&Progress>,
        stage: &'static str,
        unit: &'static str,
        total: Option<u64>,
    ) -> Self {
        let s = Stage {
            progress: progress.cloned(),
            stage,
            unit,
            total,
            completed: 0,
        };
        s.emit(Event::Start);
        s
    }

    fn emit(&self, event: Event) {
        if let Some(p) = &self.progress {
            p(&ProgressEvent {
                event,
                stage: self.stage,
                completed: self.completed,
                total: self.total,
                unit: self.unit,
            });
        }
    }

    /// `n` more units done.
    pub fn advance(&mut self, n: u64) {
        self.to(self.completed + n);
    }

    /// `completed` units done in all.
    pub fn to(&mut self, completed: u64) {
        self.completed = completed;
        self.emit(Event::Progress);
    }

    /// Sets the stage's whole work (when it became known after the start).
    pub fn set_total(&mut self, total: u64) {
        self.total = Some(total);
    }

    /// The stage ended.
    pub fn complete(self) {
        self.emit(Event::Complete);
    }
}
