//! The interpreter: a correct allocation runs like its original; a wrong one does not.

use chromatic_verifier::interp::{run, Config};

const DIAMOND: &str = include_str!("../../corpus/divergent_uniform_live_through_else.chr");

fn allocated_diamond(t0: &str) -> String {
    format!(
        "target gfx9
func @divergent_uniform_live_through_else {{
entry:
  %desc:s4@s[0:3] = s_load_dwordx4 reads
  %scale:s1@s4 = s_load_dword reads
  %tid:v1@v0 = v_mbcnt_hi
  %mask:s2@s[6:7] = v_cmp_lt_u32 %tid@v0, %scale@s4
  branch divergent %mask@s[6:7], then, else
then:
  %t0:s2@{t0} = s_mov_b64 0
  %t1:s1@s5 = s_add_u32 %scale@s4, 4
  %a:v1@v1 = v_add_u32 %tid@v0, %t1@s5
  s_nop %t0@{t0}
  jump join
else:
  %b:v1@v1 = buffer_load_dword %desc@s[0:3], %tid@v0 reads
  jump join
join:
  %r:v1@v1 = phi [then: %a], [else: %b]
  %o:v1@v2 = v_mul_lo_u32 %r@v1, %scale@s4
  global_store_dword %tid@v0, %o@v2 writes
  ret
}}
"
    )
}

fn traces(
    allocated: &str,
    seed: u64,
) -> (
    chromatic_verifier::interp::Trace,
    chromatic_verifier::interp::Trace,
) {
    let o = chromatic::parse(DIAMOND).unwrap();
    let a = chromatic::parse(allocated).unwrap();
    let config = Config {
        seed,
        ..Config::default()
    };
    (
        run(&o.functions[0], &o.target, &config),
        run(&a.functions[0], &a.target, &config),
    )
}

#[test]
fn correct_divergent_allocation_agrees_on_every_seed() {
    for seed in 0..20 {
        let (o, a) = traces(&allocated_diamond("s[8:9]"), seed);
        assert_eq!(o.first_divergence(&a), None, "seed {seed}");
        assert_eq!(o.digest(), a.digest());
        // entry: 4 ops + branch; then: 4 ops; else: 1 op; join: 2 ops + ret.
        let then_ran = o.events.iter().filter(|e| e.mask != 0xf).count() > 0;
        assert!(
            [9, 12, 13].contains(&o.events.len()),
            "seed {seed}: {then_ran}"
        );
    }
    assert_eq!(traces(&allocated_diamond("s[8:9]"), 0).0.events.len(), 13);
}

#[test]
fn then_side_clobber_of_uniform_register_changes_behaviour() {
    let diverged = (0..20)
        .filter(|&seed| {
            let (o, a) = traces(&allocated_diamond("s[0:1]"), seed);
            o.first_divergence(&a).is_some()
        })
        .count();
    assert!(diverged > 0);
}
