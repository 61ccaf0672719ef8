# Instructions of current x86-64 servers that annotate must decode: AVX-512 (F, BW, VL, VBMI,
# VNNI, BITALG, VP2INTERSECT, FP16), masks and their moves, broadcast and rounding, AMX, GFNI,
# VAES. glibc's __memcmp_evex_movbe starts like evex_compare.
        .text
        .globl evex_compare
        .type evex_compare, @function
evex_compare:
        vmovdqu64 (%rsi), %zmm16
        vpcmpnequb (%rdi), %zmm16, %k1
        vpcmpnequb (%rdi,%r11), %ymm16, %k1
        kmovd %k1, %eax
        kmovq %k2, %rcx
        kortestd %k1, %k1
        vpternlogd $0x96, %zmm2, %zmm1, %zmm0
        vpternlogq $0xde, 0x40(%rsi), %zmm17, %zmm18
        vmovdqu8 (%rsi), %zmm1{%k1}{z}
        vmovdqu8 %zmm1, (%rdi){%k2}
        vmovaps %zmm1, %zmm0{%k2}
        vaddps (%rax){1to16}, %zmm1, %zmm2
        vaddpd {rn-sae}, %zmm1, %zmm2, %zmm3
        vpcompressd %zmm1, (%rdi){%k1}
        vpgatherdd 0x10(%rax,%zmm1,4), %zmm2{%k1}
        vpermt2b %zmm1, %zmm2, %zmm3
        vpopcntb %zmm1, %zmm2
        vpdpbusd %zmm1, %zmm2, %zmm3
        vp2intersectd %zmm1, %zmm2, %k2
        vgf2p8affineqb $0x1, %zmm1, %zmm2, %zmm3
        vaesenc %zmm1, %zmm2, %zmm3
        vpminub -0x40(%rdi,%rcx,2), %zmm4, %zmm5
        vptestnmb %zmm1, %zmm1, %k0
        vpbroadcastb %esi, %zmm0
        vzeroupper
        tilerelease
        tileloadd (%rsi,%rdx,1), %tmm0
        tdpbssd %tmm1, %tmm2, %tmm3
        tilestored %tmm3, (%rdi,%rdx,1)
        vaddph %zmm1, %zmm2, %zmm3
        lock cmpxchg %rcx, (%rdx)
        xchg %ax, %ax
        ret
        .size evex_compare, .-evex_compare
        .section .note.GNU-stack,"",@progbits
