//! `chromatic verify ORIGINAL ALLOCATED`: check an allocation by independent dataflow.
//! Exit 0 valid, 1 invalid (or an original that is not a valid program), 2 unreadable
//! input. Each error is rendered against the file its position is in: the allocation, or
//! the original for what the allocation lacks (a missing function, block or operation).

use crate::diag::{Report, Source};
use crate::options::{read_program, BudgetArgs};
use crate::Outcome;
use chromatic::{Pos, Program};
use chromatic_verifier::{Side, VerifyError};
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The original (unallocated) program.
    original: String,
    /// The allocated program, from chromatic or another tool.
    allocated: String,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Print `{"valid": bool, "errors": [...]}` on standard output instead.
    #[arg(long)]
    json: bool,
}

/// One problem to report: where, which rule, and what.
struct Problem<'a> {
    source: &'a Source,
    pos: Pos,
    code: String,
    message: String,
    notes: Vec<String>,
    /// The verifier's error, for the JSON output.
    error: Option<&'a VerifyError>,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let (original_source, original) = parsed(&args.original)?;
    let (allocated_source, allocated) = parsed(&args.allocated)?;
    let options = args.budget.options(chromatic::alloc::Policy::default());
    let budget = chromatic::alloc::budget_of(&original.target, &options)?;
    let invalid = crate::check::validate(&original);
    let errors = if invalid.is_empty() {
        chromatic_verifier::verify_program(&original, &allocated, Some(&budget))
    } else {
        Vec::new()
    };
    let mut problems: Vec<Problem> = invalid
        .iter()
        .map(|e| Problem {
            source: &original_source,
            pos: e.pos,
            code: "invalid-original".into(),
            message: format!("the original is not a valid program: {}", e.message),
            notes: Vec::new(),
            error: None,
        })
        .collect();
    if original.target.header() != allocated.target.header() {
        problems.push(Problem {
            source: &allocated_source,
            pos: Pos { line: 1, col: 1 },
            code: "target-mismatch".into(),
            message: format!(
                "the allocation is for target `{}`, the original for `{}`",
                allocated.target.header(),
                original.target.header()
            ),
            notes: Vec::new(),
            error: None,
        });
    }
    problems.extend(errors.iter().map(|e| Problem {
        source: match e.side {
            Side::Original => &original_source,
            Side::Allocated => &allocated_source,
        },
        pos: Pos {
            line: e.line,
            col: e.col,
        },
        code: e.kind.code(),
        message: e.message(),
        notes: vec![format!("in {}", e.place())],
        error: Some(e),
    }));
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&as_json(&problems))?);
    } else {
        for p in &problems {
            eprint!(
                "{}",
                p.source.report(&Report {
                    pos: p.pos,
                    code: Some(&p.code),
                    message: &p.message,
                    notes: p.notes.clone(),
                })
            );
        }
        if problems.is_empty() {
            outln!("{}: valid", args.allocated);
        } else {
            let n = problems.len();
            let errors = if n == 1 { "error" } else { "errors" };
            eprintln!("{}: {n} {errors}", args.allocated);
        }
    }
    Ok(if problems.is_empty() {
        Outcome::Ok
    } else {
        Outcome::Problem
    })
}

/// `{"valid": bool, "errors": [...]}`: each error with its file, position, code, message
/// and the verifier's fields.
fn as_json(problems: &[Problem]) -> serde_json::Value {
    let errors: Vec<serde_json::Value> = problems
        .iter()
        .map(|p| {
            let mut e = match p.error.map(serde_json::to_value) {
                Some(Ok(serde_json::Value::Object(fields))) => fields,
                _ => serde_json::Map::new(),
            };
            e.insert("file".into(), json!(p.source.name));
            e.insert("line".into(), json!(p.pos.line));
            e.insert("col".into(), json!(p.pos.col));
            e.insert("kind".into(), json!(p.code));
            e.insert("message".into(), json!(p.message));
            serde_json::Value::Object(e)
        })
        .collect();
    json!({ "valid": problems.is_empty(), "errors": errors })
}

fn parsed(path: &str) -> anyhow::Result<(Source, Program)> {
    let (source, program) = read_program(path)?;
    let program =
        program.map_err(|rendered| anyhow::anyhow!("cannot parse {path}:\n{rendered}"))?;
    Ok((source, program))
}
