//! How a command that ran to its end went: the exit status `main` gives it.

/// How a command that ran to its end went.
pub enum Outcome {
    /// It did what was asked and found nothing wrong (exit status 0).
    Success,
    /// The command did its work and found a reason to exit 1 (a problem, a difference); it
    /// has already said why.
    Failure,
}

impl Outcome {
    /// [`Outcome::Failure`] when `failed`, else [`Outcome::Success`].
    pub fn failure_if(failed: bool) -> Outcome {
        if failed { Outcome::Failure } else { Outcome::Success }
    }
}
