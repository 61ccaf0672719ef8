// Instructions of current AArch64 servers that annotate must decode: SVE, SVE2 and SME.
        .arch armv9-a+sve2+sme
        .text
        .globl sve_compare
        .type sve_compare, %function
sve_compare:
        ptrue p0.b
        whilelo p1.b, x2, x3
        ld1b {z0.b}, p1/z, [x0, x2]
        ld1b {z1.b}, p1/z, [x1, x2]
        cmpne p2.b, p1/z, z0.b, z1.b
        match p3.b, p0/z, z0.b, z1.b
        histcnt z2.s, p0/z, z3.s, z4.s
        incb x2
        b.none 1f
        uaddv d0, p0, z0.b
        fmla z0.s, p0/m, z1.s, z2.s
        eor3 z0.d, z0.d, z1.d, z2.d
        st1w {z0.s}, p0, [x0, #1, mul vl]
1:      smstart
        zero {za}
        fmopa za0.s, p0/m, p1/m, z0.s, z1.s
        smstop
        ret
        .size sve_compare, .-sve_compare
