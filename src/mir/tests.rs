use super::import;
use crate::program::{BranchKind, InstKind, Terminator};

/// A hand-cut kernel in the shape `llc-19 -stop-before=phi-node-elimination` prints.
const KERNEL: &str = r#"--- |
  define amdgpu_kernel void @k() #0 { ret void }
  attributes #0 = { "target-cpu"="gfx942" }
...
---
name:            k
registers:
  - { id: 0, class: sgpr_64, preferred-register: '' }
  - { id: 1, class: vgpr_32, preferred-register: '' }
  - { id: 2, class: sreg_64, preferred-register: '' }
  - { id: 3, class: sreg_64, preferred-register: '' }
  - { id: 4, class: vgpr_32, preferred-register: '' }
  - { id: 5, class: vreg_64_align2, preferred-register: '' }
  - { id: 6, class: vgpr_32, preferred-register: '' }
body:             |
  bb.0 (%ir-block.0):
    successors: %bb.1(0x40000000), %bb.2(0x40000000)
    liveins: $vgpr0, $sgpr0_sgpr1

    %0:sgpr_64(p4) = COPY killed $sgpr0_sgpr1
    %1:vgpr_32(s32) = COPY killed $vgpr0
    %2:sreg_64 = V_CMP_GT_I32_e64 0, %1, implicit $exec
    %3:sreg_64 = SI_IF killed %2, %bb.2, implicit-def dead $exec, implicit-def dead $scc, implicit $exec
    S_BRANCH %bb.1

  bb.1:
    successors: %bb.2(0x80000000)

    %4:vgpr_32 = nofpexcept V_FMAC_F32_e32 %1, %1, %1, implicit $mode, implicit $exec
    %5:vreg_64_align2 = REG_SEQUENCE killed %4, %subreg.sub0, undef %1, %subreg.sub1
    GLOBAL_STORE_DWORD %5, %5.sub0, 0, 0, implicit $exec :: (store (s32), addrspace 1)

  bb.2:
    %6:vgpr_32 = PHI %1, %bb.0, undef %7:vgpr_32, %bb.1
    SI_END_CF killed %3, implicit-def dead $exec, implicit-def dead $scc, implicit $exec
    S_ENDPGM 0
...
"#;

#[test]
fn a_kernel_becomes_a_program_of_its_target() {
    let p = import(KERNEL).unwrap();
    assert_eq!(p.target.name, "gfx942");
    let f = &p.functions[0];
    assert_eq!(f.name, "k");
    assert_eq!(f.blocks.len(), 3);
    let entry = &f.blocks[0];
    let live_in = entry.insts[0].op().unwrap();
    assert!(live_in.defs[0].fixed.is_some() && live_in.operands.is_empty());
    assert!(matches!(
        entry.term,
        Terminator::Branch {
            kind: BranchKind::Uniform,
            ..
        }
    ));
    let fmac = f.blocks[1].insts[0].op().unwrap();
    assert_eq!(fmac.defs[0].tied, Some(2));
    // The undef PHI argument is an IMPLICIT_DEF at the end of its predecessor.
    let last = f.blocks[1].insts.last().unwrap();
    assert!(matches!(&last.kind, InstKind::Op(op) if op.opcode == "IMPLICIT_DEF"));
    crate::analysis::ssa::validate(f, &p.target).unwrap();
}

#[test]
fn errors_are_positioned() {
    let bad = KERNEL.replace("%4:vgpr_32 = nofpexcept", "%4:vgpr_32 = nofpexcept ^");
    let e = import(&bad).unwrap_err();
    assert_eq!((e.pos.line, e.pos.col), (29, 29), "{e}");
    let undefined = KERNEL.replace("%1, %1, %1, implicit $mode", "%1, %9, %1, implicit $mode");
    let e = import(&undefined).unwrap_err();
    assert_eq!(e.message, "`%9` is read but never defined");
    let no_cpu = KERNEL.replace("\"target-cpu\"=\"gfx942\"", "");
    assert!(import(&no_cpu).unwrap_err().message.contains("target-cpu"));
    let body_line = KERNEL
        .lines()
        .position(|l| l.starts_with("body:"))
        .unwrap_or(0);
    let mut lines: Vec<&str> = KERNEL.lines().collect();
    lines.insert(body_line + 1, lines[body_line]);
    let e = import(&lines.join("\n")).unwrap_err();
    assert_eq!(e.message, "a second `body:` in one machine function");
    assert_eq!(e.pos.line as usize, body_line + 2);
}

/// Two machine functions of one name would print as a program that does not parse back.
#[test]
fn a_machine_function_named_twice_is_an_error_at_the_second() {
    let start = KERNEL.find("---\nname:").expect("a machine function");
    let document = KERNEL[start..].trim_end_matches("...\n");
    let twice = format!("{}{document}", KERNEL.trim_end_matches("...\n"));
    let e = import(&twice).unwrap_err();
    assert_eq!(e.message, "duplicate machine function `k`");
    let second = twice[..twice.rfind("---\nname:").unwrap()].lines().count() + 2;
    assert_eq!(e.pos.line as usize, second, "{e}");
}

/// The opcodes of block `b` of the first function, in order.
fn opcodes(p: &crate::Program, b: usize) -> Vec<String> {
    p.functions[0].blocks[b]
        .insts
        .iter()
        .filter_map(|i| i.op().map(|op| op.opcode.to_string()))
        .collect()
}

#[test]
fn a_tuple_read_only_by_parts_is_split_after_its_definition() {
    let parts_only = KERNEL.replace(
        "GLOBAL_STORE_DWORD %5, %5.sub0,",
        "GLOBAL_STORE_DWORD %5.sub1, %5.sub0,",
    );
    let p = import(&parts_only).unwrap();
    let f = &p.functions[0];
    assert_eq!(
        opcodes(&p, 1),
        [
            "V_FMAC_F32_e32",
            "REG_SEQUENCE",
            "SPLIT",
            "GLOBAL_STORE_DWORD",
            "IMPLICIT_DEF"
        ]
    );
    let split = f.blocks[1].insts[2].op().unwrap();
    let names: Vec<&str> = split
        .defs
        .iter()
        .map(|d| f.value(d.value).name.as_str())
        .collect();
    assert_eq!(names, ["5.sub0", "5.sub1"]);
    // Read whole as well, the tuple stays one value.
    assert!(!opcodes(&import(KERNEL).unwrap(), 1).contains(&"SPLIT".to_string()));
}

#[test]
fn a_copy_within_a_class_is_forwarded() {
    let copied = KERNEL
        .replace(
            "    %5:vreg_64_align2 = REG_SEQUENCE killed %4,",
            "    %8:vgpr_32 = COPY %4\n    %5:vreg_64_align2 = REG_SEQUENCE killed %8,",
        )
        .replace(
            "  - { id: 6, class: vgpr_32, preferred-register: '' }",
            "  - { id: 6, class: vgpr_32, preferred-register: '' }\n  - { id: 8, class: vgpr_32, preferred-register: '' }",
        );
    let p = import(&copied).unwrap();
    let f = &p.functions[0];
    assert!(!opcodes(&p, 1).contains(&"COPY".to_string()));
    let collect = f.blocks[1].insts[1].op().unwrap();
    let first = collect.uses().next().unwrap();
    assert_eq!(f.value(first.value).name, "4");
    assert!(f.values.iter().all(|v| v.name != "8"));
}

/// A join with three PHIs: `%8` is `%6` but undefined where the wave skipped `bb.1`, so it
/// is `%6`; `%9` takes another value on `bb.1`'s edge and stays (LLVM's coalescer joins
/// the first pair only).
#[test]
fn a_phi_equal_to_another_but_where_undef_is_merged_into_it() {
    let join = "    %6:vgpr_32 = PHI %1, %bb.0, undef %7:vgpr_32, %bb.1\n";
    let phis = "    %6:vgpr_32 = PHI %1, %bb.0, %4, %bb.1
    %8:vgpr_32 = PHI undef %7:vgpr_32, %bb.0, %4, %bb.1
    %9:vgpr_32 = PHI undef %10:vgpr_32, %bb.0, %1, %bb.1
    %11:vgpr_32 = V_ADD_U32_e32 %6, %8, implicit $exec
    %12:vgpr_32 = V_ADD_U32_e32 %11, %9, implicit $exec
";
    assert!(KERNEL.contains(join));
    let p = import(&KERNEL.replace(join, phis)).unwrap();
    let f = &p.functions[0];
    let bb2 = &f.blocks[2];
    assert_eq!(bb2.phis.len(), 2, "{:?}", bb2.phis);
    let add = bb2.insts[0].op().unwrap();
    let reads: Vec<_> = add.uses().map(|u| u.value).collect();
    assert_eq!(reads, [bb2.phis[0].def.value; 2], "%8 reads as %6");
    let implicit_defs = |b: usize| {
        f.blocks[b]
            .insts
            .iter()
            .filter(|i| matches!(&i.kind, InstKind::Op(op) if op.opcode == "IMPLICIT_DEF"))
            .count()
    };
    assert_eq!(implicit_defs(0), 1, "only %9's undef argument is left");
    crate::analysis::ssa::validate(f, &p.target).unwrap();
}

#[test]
fn annotations_after_the_operands_are_not_operands() {
    let annotated = KERNEL
        .replace(
            "    GLOBAL_STORE_DWORD",
            "    ATOMIC_FENCE 5, 2, mmra !3\n    GLOBAL_STORE_DWORD",
        )
        .replace("S_ENDPGM 0\n", "S_ENDPGM 0, debug-location !12\n")
        .replace(
            "implicit $mode, implicit $exec\n",
            "implicit $mode, implicit $exec, pcsections !4\n",
        );
    let p = import(&annotated).unwrap();
    let fence = &p.functions[0].blocks[1].insts;
    let fence = fence
        .iter()
        .filter_map(|i| i.op())
        .find(|op| op.opcode.as_str() == "ATOMIC_FENCE")
        .expect("the fence is imported");
    assert_eq!(fence.operands.len(), 2);
}

#[test]
fn an_empty_operand_is_an_error_at_its_comma() {
    let bad = KERNEL.replace(
        "GLOBAL_STORE_DWORD %5, %5.sub0,",
        "GLOBAL_STORE_DWORD %5, , %5.sub0,",
    );
    let e = import(&bad).unwrap_err();
    assert_eq!(e.message, "empty operand");
    let line = bad.lines().position(|l| l.contains(", ,")).unwrap() + 1;
    let comma = bad.lines().nth(line - 1).unwrap().find(", ,").unwrap() + 1;
    assert_eq!(
        (e.pos.line as usize, e.pos.col as usize),
        (line, comma),
        "{e}"
    );
    let trailing = KERNEL.replace("S_ENDPGM 0\n", "S_ENDPGM 0,\n");
    let e = import(&trailing).unwrap_err();
    let line = trailing
        .lines()
        .position(|l| l.contains("S_ENDPGM 0,"))
        .unwrap()
        + 1;
    assert_eq!(e.pos.line as usize, line, "{e}");
}
