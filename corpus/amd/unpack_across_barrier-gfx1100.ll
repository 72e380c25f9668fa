target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @unpack_across_barrier(ptr addrspace(1) %out, ptr addrspace(1) %in, ptr addrspace(3) %lds) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr <8 x i32>, ptr addrspace(1) %in, i32 %tid
  %packed = load <8 x i32>, ptr addrspace(1) %p, align 32
  %w0 = extractelement <8 x i32> %packed, i32 0
  %lo0.i = shl i32 %w0, 16
  %hi0.i = and i32 %w0, -65536
  %lo0 = bitcast i32 %lo0.i to float
  %hi0 = bitcast i32 %hi0.i to float
  %sq0 = fmul float %lo0, %hi0
  %w1 = extractelement <8 x i32> %packed, i32 1
  %lo1.i = shl i32 %w1, 16
  %hi1.i = and i32 %w1, -65536
  %lo1 = bitcast i32 %lo1.i to float
  %hi1 = bitcast i32 %hi1.i to float
  %sq1 = fmul float %lo1, %hi1
  %acc1 = fadd float %sq0, %sq1
  %w2 = extractelement <8 x i32> %packed, i32 2
  %lo2.i = shl i32 %w2, 16
  %hi2.i = and i32 %w2, -65536
  %lo2 = bitcast i32 %lo2.i to float
  %hi2 = bitcast i32 %hi2.i to float
  %sq2 = fmul float %lo2, %hi2
  %acc2 = fadd float %acc1, %sq2
  %w3 = extractelement <8 x i32> %packed, i32 3
  %lo3.i = shl i32 %w3, 16
  %hi3.i = and i32 %w3, -65536
  %lo3 = bitcast i32 %lo3.i to float
  %hi3 = bitcast i32 %hi3.i to float
  %sq3 = fmul float %lo3, %hi3
  %acc3 = fadd float %acc2, %sq3
  %w4 = extractelement <8 x i32> %packed, i32 4
  %lo4.i = shl i32 %w4, 16
  %hi4.i = and i32 %w4, -65536
  %lo4 = bitcast i32 %lo4.i to float
  %hi4 = bitcast i32 %hi4.i to float
  %sq4 = fmul float %lo4, %hi4
  %acc4 = fadd float %acc3, %sq4
  %w5 = extractelement <8 x i32> %packed, i32 5
  %lo5.i = shl i32 %w5, 16
  %hi5.i = and i32 %w5, -65536
  %lo5 = bitcast i32 %lo5.i to float
  %hi5 = bitcast i32 %hi5.i to float
  %sq5 = fmul float %lo5, %hi5
  %acc5 = fadd float %acc4, %sq5
  %w6 = extractelement <8 x i32> %packed, i32 6
  %lo6.i = shl i32 %w6, 16
  %hi6.i = and i32 %w6, -65536
  %lo6 = bitcast i32 %lo6.i to float
  %hi6 = bitcast i32 %hi6.i to float
  %sq6 = fmul float %lo6, %hi6
  %acc6 = fadd float %acc5, %sq6
  %w7 = extractelement <8 x i32> %packed, i32 7
  %lo7.i = shl i32 %w7, 16
  %hi7.i = and i32 %w7, -65536
  %lo7 = bitcast i32 %lo7.i to float
  %hi7 = bitcast i32 %hi7.i to float
  %sq7 = fmul float %lo7, %hi7
  %acc7 = fadd float %acc6, %sq7
  %slot = getelementptr float, ptr addrspace(3) %lds, i32 %tid
  store float %acc7, ptr addrspace(3) %slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %other = xor i32 %tid, 1
  %oslot = getelementptr float, ptr addrspace(3) %lds, i32 %other
  %r = load float, ptr addrspace(3) %oslot, align 4
  %base = mul i32 %tid, 16
  %y0 = fmul float %lo0, %r
  %q0.i = add i32 %base, 0
  %q0 = getelementptr float, ptr addrspace(1) %out, i32 %q0.i
  store float %y0, ptr addrspace(1) %q0, align 4
  %y1 = fmul float %hi0, %r
  %q1.i = add i32 %base, 1
  %q1 = getelementptr float, ptr addrspace(1) %out, i32 %q1.i
  store float %y1, ptr addrspace(1) %q1, align 4
  %y2 = fmul float %lo1, %r
  %q2.i = add i32 %base, 2
  %q2 = getelementptr float, ptr addrspace(1) %out, i32 %q2.i
  store float %y2, ptr addrspace(1) %q2, align 4
  %y3 = fmul float %hi1, %r
  %q3.i = add i32 %base, 3
  %q3 = getelementptr float, ptr addrspace(1) %out, i32 %q3.i
  store float %y3, ptr addrspace(1) %q3, align 4
  %y4 = fmul float %lo2, %r
  %q4.i = add i32 %base, 4
  %q4 = getelementptr float, ptr addrspace(1) %out, i32 %q4.i
  store float %y4, ptr addrspace(1) %q4, align 4
  %y5 = fmul float %hi2, %r
  %q5.i = add i32 %base, 5
  %q5 = getelementptr float, ptr addrspace(1) %out, i32 %q5.i
  store float %y5, ptr addrspace(1) %q5, align 4
  %y6 = fmul float %lo3, %r
  %q6.i = add i32 %base, 6
  %q6 = getelementptr float, ptr addrspace(1) %out, i32 %q6.i
  store float %y6, ptr addrspace(1) %q6, align 4
  %y7 = fmul float %hi3, %r
  %q7.i = add i32 %base, 7
  %q7 = getelementptr float, ptr addrspace(1) %out, i32 %q7.i
  store float %y7, ptr addrspace(1) %q7, align 4
  %y8 = fmul float %lo4, %r
  %q8.i = add i32 %base, 8
  %q8 = getelementptr float, ptr addrspace(1) %out, i32 %q8.i
  store float %y8, ptr addrspace(1) %q8, align 4
  %y9 = fmul float %hi4, %r
  %q9.i = add i32 %base, 9
  %q9 = getelementptr float, ptr addrspace(1) %out, i32 %q9.i
  store float %y9, ptr addrspace(1) %q9, align 4
  %y10 = fmul float %lo5, %r
  %q10.i = add i32 %base, 10
  %q10 = getelementptr float, ptr addrspace(1) %out, i32 %q10.i
  store float %y10, ptr addrspace(1) %q10, align 4
  %y11 = fmul float %hi5, %r
  %q11.i = add i32 %base, 11
  %q11 = getelementptr float, ptr addrspace(1) %out, i32 %q11.i
  store float %y11, ptr addrspace(1) %q11, align 4
  %y12 = fmul float %lo6, %r
  %q12.i = add i32 %base, 12
  %q12 = getelementptr float, ptr addrspace(1) %out, i32 %q12.i
  store float %y12, ptr addrspace(1) %q12, align 4
  %y13 = fmul float %hi6, %r
  %q13.i = add i32 %base, 13
  %q13 = getelementptr float, ptr addrspace(1) %out, i32 %q13.i
  store float %y13, ptr addrspace(1) %q13, align 4
  %y14 = fmul float %lo7, %r
  %q14.i = add i32 %base, 14
  %q14 = getelementptr float, ptr addrspace(1) %out, i32 %q14.i
  store float %y14, ptr addrspace(1) %q14, align 4
  %y15 = fmul float %hi7, %r
  %q15.i = add i32 %base, 15
  %q15 = getelementptr float, ptr addrspace(1) %out, i32 %q15.i
  store float %y15, ptr addrspace(1) %q15, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
