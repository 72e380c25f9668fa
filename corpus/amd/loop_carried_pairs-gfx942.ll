target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @carried_pairs(ptr addrspace(1) %out, ptr addrspace(1) %in, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %a0.0 = phi float [ 0.0, %entry ], [ %s0.0, %loop ]
  %a0.1 = phi float [ 0.0, %entry ], [ %s0.1, %loop ]
  %a1.0 = phi float [ 0.0, %entry ], [ %s1.0, %loop ]
  %a1.1 = phi float [ 0.0, %entry ], [ %s1.1, %loop ]
  %a2.0 = phi float [ 0.0, %entry ], [ %s2.0, %loop ]
  %a2.1 = phi float [ 0.0, %entry ], [ %s2.1, %loop ]
  %a3.0 = phi float [ 0.0, %entry ], [ %s3.0, %loop ]
  %a3.1 = phi float [ 0.0, %entry ], [ %s3.1, %loop ]
  %v0.0 = insertelement <2 x float> poison, float %a0.0, i32 0
  %v0 = insertelement <2 x float> %v0.0, float %a0.1, i32 1
  %v1.0 = insertelement <2 x float> poison, float %a1.0, i32 0
  %v1 = insertelement <2 x float> %v1.0, float %a1.1, i32 1
  %v2.0 = insertelement <2 x float> poison, float %a2.0, i32 0
  %v2 = insertelement <2 x float> %v2.0, float %a2.1, i32 1
  %v3.0 = insertelement <2 x float> poison, float %a3.0, i32 0
  %v3 = insertelement <2 x float> %v3.0, float %a3.1, i32 1
  %idx = add i32 %i, %tid
  %p = getelementptr <2 x float>, ptr addrspace(1) %in, i32 %idx
  %x = load <2 x float>, ptr addrspace(1) %p, align 8
  %s0 = fadd <2 x float> %v0, %x
  %s0.0 = extractelement <2 x float> %s0, i32 0
  %s0.1 = extractelement <2 x float> %s0, i32 1
  %s1 = fadd <2 x float> %v1, %x
  %s1.0 = extractelement <2 x float> %s1, i32 0
  %s1.1 = extractelement <2 x float> %s1, i32 1
  %s2 = fadd <2 x float> %v2, %x
  %s2.0 = extractelement <2 x float> %s2, i32 0
  %s2.1 = extractelement <2 x float> %s2, i32 1
  %s3 = fadd <2 x float> %v3, %x
  %s3.0 = extractelement <2 x float> %s3, i32 0
  %s3.1 = extractelement <2 x float> %s3, i32 1
  %i.next = add i32 %i, 1
  %c = icmp slt i32 %i.next, %n
  br i1 %c, label %loop, label %exit

exit:
  %r1 = fadd <2 x float> %s0, %s1
  %r2 = fadd <2 x float> %r1, %s2
  %r3 = fadd <2 x float> %r2, %s3
  %nf = sitofp i32 %n to float
  %nv.0 = insertelement <2 x float> poison, float %nf, i32 0
  %nv = insertelement <2 x float> %nv.0, float %nf, i32 1
  %mean = fdiv <2 x float> %r3, %nv
  %o = getelementptr <2 x float>, ptr addrspace(1) %out, i32 %tid
  store <2 x float> %mean, ptr addrspace(1) %o, align 8
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
attributes #0 = { "target-cpu"="gfx942" }
