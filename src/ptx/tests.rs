//! The importer and exporter on small kernels: the program each PTX idiom becomes, and
//! the PTX an allocation is written back as.

use super::*;
use crate::program::*;

fn import_text(src: &str) -> String {
    crate::print(&import(src).unwrap_or_else(|e| panic!("{e}")).program)
}

fn error_of(src: &str) -> String {
    import(src).expect_err("an error").to_string()
}

const HEAD: &str = ".version 9.0\n.target sm_90a\n.address_size 64\n";

/// Guarded loads keep the old value (tied), vector loads are tuples split into their
/// elements, a copy forwards its source, loops get phis, `@!%p ret` branches to an exit
/// block, registers read where nothing defined them get `undef`, kernel parameters and
/// zeros are read without a register where the instruction allows it, and blocks come in
/// reverse post-order.
#[test]
fn guards_tuples_copies_loops_and_exits() {
    let src = format!(
        "{HEAD}.visible .entry k(.param .u64 k_p0, .param .u32 k_p1)
{{
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [k_p0];
	ld.param.u32 %r1, [k_p1];
	mov.u32 %r2, %tid.x;
	setp.lt.s32 %p1, %r2, %r1;
	mov.u32 %r3, 0x0;
	mov.u32 %r4, 0x0;
	mov.u32 %r5, 0x0;
	mov.u32 %r6, 0x0;
	mul.wide.s32 %rd2, %r2, 16;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 ld.global.v4.b32 {{%r3, %r4, %r5, %r6}}, [%rd3+0];
	add.s32 %r7, %r3, %r4;
	mov.b32 %r8, %r7;
$L__loop:
	add.s32 %r8, %r8, %r5;
	setp.lt.s32 %p2, %r8, 100;
	@%p2 bra $L__loop;
	@!%p1 ret;
	st.global.v4.b32 [%rd3+16], {{%r8, %r6, %r9, %r8}};
	st.global.u32 [%rd1+64], 0;
	ret;
}}
"
    );
    assert_eq!(
        import_text(&src),
        "target sm_90

func @k {
bb0:
  %r2.1:r1 = mov.u32 remat
  %p1.1:p1 = setp.lt.s32 %r2.1, 4
  %rd2.1:r2 = mul.wide.s32 %r2.1, 16
  %rd3.1:r2 = add.s64 3, %rd2.1
  %r3.3:r1 = mov.u32 0 remat
  %r4.3:r1 = mov.u32 0 remat
  %r5.3:r1 = mov.u32 0 remat
  %r6.3:r1 = mov.u32 0 remat
  %tuple.1:r4 = collect %r3.3, %r4.3, %r5.3, %r6.3
  %tuple.2:r4 = ld.global.v4.b32 %rd3.1, %p1.1, %tuple.1 tied(2) reads
  %r3.2:r1, %r4.2:r1, %r5.2:r1, %r6.2:r1 = split %tuple.2
  %r7.1:r1 = add.s32 %r3.2, %r4.2
  jump L__loop
L__loop:
  %r8.1:r1 = phi [bb0: %r7.1], [L__loop: %r8.2]
  %r8.2:r1 = add.s32 %r8.1, %r5.2
  %p2.1:p1 = setp.lt.s32 %r8.2, 100
  branch divergent %p2.1, L__loop, bb2
bb2:
  branch divergent %p1.1, bb3, exit
exit:
  ret
bb3:
  %undef.1:r1 = undef remat
  %tuple.3:r4 = collect %r8.2, %r6.2, %undef.1, %r8.2
  st.global.v4.b32 %rd3.1, %tuple.3 writes
  %rd1.2:r2 = ld.param.u64 remat reads
  st.global.u32 %rd1.2, 0 writes
  ret
}
"
    );
}

const WGMMA: &str = "
.visible .entry w(.param .u64 w_p0)
{
	.reg .pred %p<3>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [w_p0];
	mov.b32 %r1, 0;
	mov.b32 %r2, %r1;
	mov.b32 %r3, %r1;
	mov.b32 %r4, %r1;
	mov.b32 %r5, %r1;
	mov.b32 %r6, %r1;
	mov.b32 %r7, %r1;
	mov.b32 %r8, %r1;
	mov.b64 %rd2, 0;
$L__BB0_1:
	wgmma.fence.sync.aligned;
	mov.pred %p1, -1;
	wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}, %rd2, %rd2, %p1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 1;
	add.s64 %rd2, %rd2, 1;
	setp.ne.b64 %p2, %rd2, 8;
	@%p2 bra $L__BB0_1;
	wgmma.wait_group.sync.aligned 0;
	add.f32 %r9, %r1, %r8;
	st.global.f32 [%rd1], %r9;
	ret;
}
";

/// The accumulator is one 8-register tuple carried around the loop by a pinned phi, the
/// waits read and redefine it (pinned while a group may still be in flight), and it is
/// split into its elements only after `wait_group 0`.
#[test]
fn wgmma_accumulators_stay_whole_and_pinned() {
    let text = import_text(&format!("{HEAD}{WGMMA}"));
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for expected in [
        "%tuple.7:r8 = phi [bb0: %tuple.8], [L__BB0_1: %tuple.4] pinned",
        "%tuple.2:r8 = wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 %tuple.7, %rd2.1, %rd2.1, -1, 1, 1, 0, 0 tied(0) pinned barrier",
        "%tuple.4:r8 = wgmma.wait_group.sync.aligned %tuple.2 tied(0) pinned barrier",
        "%tuple.6:r8 = wgmma.wait_group.sync.aligned %tuple.4 tied(0) barrier",
    ] {
        assert!(lines.contains(&expected), "{expected}\n{text}");
    }
    let in_loop = text
        .split("L__BB0_1:")
        .nth(1)
        .and_then(|t| t.split("bb2:").next())
        .unwrap_or_default();
    assert!(
        !in_loop.contains("split") && !in_loop.contains("collect"),
        "{in_loop}"
    );
}

/// `w + c` used only as address bases is read as `w` with the offset folded in, and the
/// exporter writes `[w+c + …]`.
#[test]
fn address_offsets_fold_into_addresses() {
    let src = format!(
        "{HEAD}.visible .entry a()
{{
	.reg .b32 %r<8>;
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	add.s32 %r3, %r2, 128;
	add.s32 %r4, %r3, -64;
	ld.shared.u32 %r5, [%r4+4];
	ld.shared.u32 %r6, [%r3];
	add.s32 %r7, %r5, %r6;
	st.shared.u32 [%r2], %r7;
	ret;
}}
"
    );
    let imported = import(&src).unwrap();
    assert_eq!(
        crate::print(&imported.program),
        "target sm_90

func @a {
bb0:
  %r1.1:r1 = mov.u32 remat
  %r2.1:r1 = shl.b32 %r1.1, 2
  %r5.1:r1 = ld.shared.u32 %r2.1 reads
  %r6.1:r1 = ld.shared.u32 %r2.1 reads
  %r7.1:r1 = add.s32 %r5.1, %r6.1
  st.shared.u32 %r2.1, %r7.1 writes
  ret
}
"
    );
    let out = export_unique(&src, &imported);
    assert!(out.contains("ld.shared.u32 %r2, [%r1+64+4];"), "{out}");
    assert!(out.contains("ld.shared.u32 %r3, [%r1+128];"), "{out}");
    assert!(!out.contains(", 128;") && !out.contains(", -64;"), "{out}");
}

/// A 32-bit value widened to 64 bits and truncated back is the value itself: the
/// truncation forwards it, so the 64-bit register need not live until it; a truncation of
/// a 64-bit value that was not widened, or with `.sat`, stays an operation.
#[test]
fn a_truncation_of_a_widened_value_forwards_it() {
    let src = format!(
        "{HEAD}.visible .entry w(.param .u64 w_p0)
{{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [w_p0];
	mov.u32 %r1, %tid.x;
	add.s32 %r2, %r1, 640;
	cvt.s64.s32 %rd2, %r2;
	cvt.u32.u64 %r3, %rd2;
	cvt.u32.u64 %r4, %rd1;
	cvt.sat.u32.s64 %r6, %rd2;
	add.s32 %r5, %r3, %r4;
	add.s32 %r7, %r5, %r6;
	st.global.u32 [%rd1], %r7;
	ret;
}}
"
    );
    let text = import_text(&src);
    assert!(text.contains("%r5.1:r1 = add.s32 %r2.1, %r4.1"), "{text}");
    assert!(!text.contains("%r3."), "{text}");
    assert!(text.contains("%r4.1:r1 = cvt.u32.u64 "), "{text}");
    assert!(text.contains("%r6.1:r1 = cvt.sat.u32.s64 %rd2.1"), "{text}");
}

/// An allocation that gives every value registers of its own, in value order: valid, so
/// the verifier accepts it, and independent of the production allocator.
fn unique_allocation(p: &Program) -> Program {
    let mut p = p.clone();
    for f in &mut p.functions {
        let mut next = vec![0u16; p.target.classes.len()];
        let mut locs = Vec::with_capacity(f.values.len());
        for v in &f.values {
            let class = p.target.class(v.class);
            let align = class.align.alignment(v.size);
            let first = next[v.class.index()].div_ceil(align) * align;
            next[v.class.index()] = first + v.size;
            locs.push(Location::Reg {
                class: v.class,
                first,
                len: v.size,
            });
        }
        for b in &mut f.blocks {
            for phi in &mut b.phis {
                phi.def.loc = Some(locs[phi.def.value.index()]);
            }
            for inst in &mut b.insts {
                if let InstKind::Op(op) = &mut inst.kind {
                    op.defs
                        .iter_mut()
                        .for_each(|d| d.loc = Some(locs[d.value.index()]));
                    for o in &mut op.operands {
                        if let Operand::Value(u) = o {
                            u.loc = Some(locs[u.value.index()]);
                        }
                    }
                }
            }
            b.term
                .uses_mut()
                .iter_mut()
                .for_each(|u| u.loc = Some(locs[u.value.index()]));
        }
    }
    p
}

fn export_unique(src: &str, imported: &Imported) -> String {
    let allocated = unique_allocation(&imported.program);
    export::export(src, &imported.module, &imported.program, &allocated).unwrap()
}

/// Registers renamed to their allocated units, declarations replaced, tuples written as
/// vectors of their units, `split` and `collect` as moves where the units differ, constants
/// read without a register kept in a register of their own, the rest of the text as it was.
#[test]
fn export_renames_and_declares() {
    let src = format!(
        "{HEAD}.visible .entry e(.param .u64 e_p0)
{{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<3>;
	// a comment
	ld.param.u64 %rd1, [e_p0];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	ld.global.v2.b32 {{%r2, %r3}}, [%rd1];
	add.s32 %r4, %r2, %r3;
	@%p1 st.global.u32 [%rd1+8], %r4;
	ret;
}}
"
    );
    let imported = import(&src).unwrap();
    let out = export_unique(&src, &imported);
    let expected = format!(
        "{HEAD}.visible .entry e(.param .u64 e_p0)
{{
\t.reg .pred %p<1>;
\t.reg .b32 %r<7>;
\t.reg .b64 %rd<11>;

\t// a comment
\tmov.u32 %r0, %tid.x;
\tsetp.lt.u32 %p0, %r0, 32;
\tld.param.u64 %rd8, [e_p0];
\tld.global.v2.b32 {{%r2, %r3}}, [%rd8];
\tmov.b32 %r4, %r2;
\tmov.b32 %r5, %r3;
\tadd.s32 %r6, %r4, %r5;
\tld.param.u64 %rd10, [e_p0];
\t@%p0 st.global.u32 [%rd10+8], %r6;
\tret;
}}
"
    );
    let allocated = unique_allocation(&imported.program);
    let f = &allocated.functions[0];
    let names: Vec<&str> = f.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["r1.1", "p1.1", "tuple.1", "r2.1", "r3.1", "r4.1", "rd1.2", "rd1.3"],
        "the expected text depends on this order"
    );
    assert_eq!(out, expected);
}

#[test]
fn positioned_errors_for_unsupported_input() {
    let entry =
        |body: &str| format!("{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<4>;\n{body}\n}}\n");
    assert_eq!(
        error_of(&entry("\tbra $L__nowhere;")),
        "7:6: undefined label `$L__nowhere`"
    );
    assert_eq!(
        error_of(&entry("\tbrx.idx %r1, $L__tab;")),
        "7:2: unsupported: indirect branch `brx.idx`"
    );
    assert_eq!(
        error_of(&entry("\t@%r1 add.s32 %r1, %r2, 1;")),
        "7:3: the guard `%r1` is not a predicate"
    );
    assert_eq!(
        error_of(&format!(
            "{HEAD}.entry k() {{ ret; }}\n.entry k() {{ ret; }}"
        )),
        "5:8: `k` is defined a second time"
    );
    assert_eq!(
        error_of(".target sm_61\n.entry k() { ret; }"),
        "1:9: unsupported target `sm_61` (sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89, \
         sm_90, sm_100, sm_103, sm_120 and sm_121 are)"
    );
    assert_eq!(
        error_of(&entry("\tld.global.v4.b32 {%r1, 0, %r2, %r3}, [%r0];")),
        "7:19: a destination vector element must be a register or `_`"
    );
}

/// A wgmma accumulator read element by element before a wait retires it is refused.
#[test]
fn reading_an_accumulator_in_flight_is_refused() {
    let src = format!("{HEAD}{WGMMA}")
        .replace("\twgmma.wait_group.sync.aligned 0;\n\tadd.f32", "\tadd.f32");
    assert!(
        error_of(&src).contains("a `wgmma` accumulator in flight is read element by element"),
        "{}",
        error_of(&src)
    );
}

/// A-fragments in registers are in flight like the accumulator: read-modify-write, pinned,
/// and waited for.
#[test]
fn wgmma_register_fragments_are_pinned_too() {
    let src = format!(
        "{HEAD}.visible .entry f()
{{
	.reg .pred %p<2>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<2>;
	mov.b64 %rd1, 0;
	mov.b32 %r1, 0;
	mov.b32 %r2, %r1;
	mov.b32 %r3, %r1;
	mov.b32 %r4, %r1;
	mov.u32 %r5, %tid.x;
	mov.u32 %r6, %r5;
	mov.u32 %r7, %r5;
	mov.u32 %r8, %r5;
	setp.ne.s32 %p1, %r5, 0;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%r1,%r2,%r3,%r4}}, {{%r5,%r6,%r7,%r8}}, %rd1, %p1, 1, 1, 1;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 0;
	add.f32 %r9, %r1, %r5;
	st.shared.f32 [%r9], %r4;
	ret;
}}
"
    );
    let text = import_text(&src);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mma = lines.iter().find(|l| l.contains("mma_async")).unwrap();
    assert!(mma.contains("tied(0) tied(1=1) pinned pinned(1)"), "{mma}");
    let wait = lines.iter().find(|l| l.contains("wait_group")).unwrap();
    assert!(
        wait.starts_with("%tuple.")
            && wait.contains(", %tuple.")
            && wait.ends_with("tied(0) tied(1=1) barrier"),
        "{wait}"
    );
}

/// A guarded branch to the next statement goes there either way: a jump.
#[test]
fn branch_to_the_fall_through_is_a_jump() {
    let src = format!(
        "{HEAD}.visible .entry j()
{{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	mov.u32 %r1, %tid.x;
	setp.eq.s32 %p1, %r1, 0;
	@%p1 bra $L__next;
$L__next:
	st.shared.u32 [%r1], %r1;
	ret;
}}
"
    );
    let imported = import(&src).unwrap();
    assert_eq!(
        crate::print(&imported.program),
        "target sm_90

func @j {
bb0:
  %r1.1:r1 = mov.u32 remat
  %p1.1:p1 = setp.eq.s32 %r1.1, 0
  jump L__next
L__next:
  st.shared.u32 %r1.1, %r1.1 writes
  ret
}
"
    );
    let out = export_unique(&src, &imported);
    assert!(!out.contains("bra"), "{out}");
}

#[test]
fn each_architecture_imports_as_the_model_of_its_capability() {
    let expect = [
        ("sm_70", "sm_70"),
        ("sm_75", "sm_75"),
        ("sm_80", "sm_80"),
        ("sm_86", "sm_86"),
        ("sm_89", "sm_86"),
        ("sm_90a", "sm_90"),
        ("sm_100a", "sm_100"),
        ("sm_120", "sm_120"),
    ];
    for (arch, target) in expect {
        let src = format!(".version 8.7\n.target {arch}\n.address_size 64\n.entry k() {{ ret; }}");
        let imported = import(&src).unwrap_or_else(|e| panic!("{arch}: {e:?}"));
        assert_eq!(imported.program.target.name, target, "{arch}");
    }
}
