//! An [`Ilp`] through the HiGHS MIP solver (the `highs` feature). HiGHS takes a full
//! starting solution only, so a partial start is completed first by solving the model
//! with the given variables fixed. The gap tolerance is 0: `optimal` means proven, as
//! with microlp. HiGHS runs on one thread: the callers run functions in parallel.

use super::{Failure, Ilp, Op, Outcome, Settings, Var};
use highs::{HighsModelStatus, HighsSolutionStatus, Model, RowProblem, Sense, SolvedModel};

pub(super) fn solve(
    ilp: &Ilp,
    settings: Settings,
    start: &[(Var, f64)],
) -> Result<Outcome, Failure> {
    let start = complete(ilp, settings, start)?;
    let mut model = model(ilp, &[], settings)?;
    if let Some(values) = &start {
        model
            .try_set_solution(Some(values), None, None, None)
            .map_err(|e| Failure::Error(format!("HiGHS refused the start: {e:?}")))?;
    }
    let solved = run(model)?;
    let empty = solved.status() == HighsModelStatus::ModelEmpty;
    let values = (empty || has_solution(&solved)).then(|| solved.get_solution().columns().to_vec());
    let optimal = (empty || solved.status() == HighsModelStatus::Optimal) && values.is_some();
    let bound = if optimal {
        Some(solved.objective_value())
    } else {
        solved
            .double_info_value(c"mip_dual_bound")
            .ok()
            .filter(|b| b.is_finite())
    };
    Ok(Outcome {
        values,
        optimal,
        bound,
    })
}

/// Every variable's value in the start: as given where it covers the model, else the
/// best solution with its variables fixed (`None` when there is none, or no start).
fn complete(
    ilp: &Ilp,
    settings: Settings,
    start: &[(Var, f64)],
) -> Result<Option<Vec<f64>>, Failure> {
    let mut fixed: Vec<Option<f64>> = vec![None; ilp.columns.len()];
    for &(x, v) in start {
        fixed[x.0] = Some(v);
    }
    if start.is_empty() {
        return Ok(None);
    }
    if let Some(full) = fixed.iter().copied().collect::<Option<Vec<f64>>>() {
        return Ok(Some(full));
    }
    match run(model(ilp, &fixed, settings)?) {
        Ok(solved) => Ok(has_solution(&solved).then(|| solved.get_solution().columns().to_vec())),
        Err(Failure::Infeasible) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The model in HiGHS, quiet, with the limits and a zero gap tolerance; a variable with a
/// value in `fixed` is fixed to it.
fn model(ilp: &Ilp, fixed: &[Option<f64>], settings: Settings) -> Result<Model, Failure> {
    let mut problem = RowProblem::default();
    let columns: Vec<_> = ilp
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (lower, upper) = match fixed.get(i).copied().flatten() {
                Some(v) => (v, v),
                None => (0.0, 1.0),
            };
            problem.add_column_with_integrality(c.cost, lower..=upper, c.integer)
        })
        .collect();
    for row in &ilp.rows {
        let factors = row.terms.iter().map(|&(x, a)| (columns[x.0], a));
        match row.op {
            Op::Le => problem.add_row(..=row.rhs, factors),
            Op::Eq => problem.add_row(row.rhs..=row.rhs, factors),
        }
    }
    let mut model = problem.try_optimise(Sense::Minimise).map_err(error)?;
    model.make_quiet();
    model
        .try_set_option("time_limit", settings.time.as_secs_f64())
        .map_err(error)?;
    model.try_set_option("mip_rel_gap", 0.0).map_err(error)?;
    model.try_set_option("threads", 1).map_err(error)?;
    if let Some(nodes) = settings.nodes {
        let nodes = i32::try_from(nodes).unwrap_or(i32::MAX);
        model
            .try_set_option("mip_max_nodes", nodes)
            .map_err(error)?;
    }
    Ok(model)
}

/// The model solved: stopped by a limit or at the optimum, or a failure.
fn run(model: Model) -> Result<SolvedModel, Failure> {
    let solved = model.try_solve().map_err(error)?;
    match solved.status() {
        HighsModelStatus::Infeasible | HighsModelStatus::UnboundedOrInfeasible => {
            Err(Failure::Infeasible)
        }
        HighsModelStatus::Optimal
        | HighsModelStatus::ModelEmpty
        | HighsModelStatus::ReachedTimeLimit
        | HighsModelStatus::ReachedIterationLimit
        | HighsModelStatus::ReachedSolutionLimit
        | HighsModelStatus::ReachedMemoryLimit => Ok(solved),
        status => Err(Failure::Error(format!("HiGHS stopped: {status:?}"))),
    }
}

fn error(e: impl std::fmt::Debug) -> Failure {
    Failure::Error(format!("HiGHS: {e:?}"))
}

fn has_solution(solved: &SolvedModel) -> bool {
    solved.primal_solution_status() == HighsSolutionStatus::Feasible
}
