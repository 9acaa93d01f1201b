FRACTAL_BYTES = 512
EDGE = 16  # one 16 x 16 block of C at a time: many tiny Mmads, A and B fetched again


def matmul_tile_kernel(a, b, c, tiling):
    m, n, k = tiling.m, tiling.n, tiling.k
    aGm = GlobalTensor(half)
    aGm.SetGlobalBuffer(a, m * k)
    bGm = GlobalTensor(half)
    bGm.SetGlobalBuffer(b, k * n)
    cGm = GlobalTensor(float)
    cGm.SetGlobalBuffer(c, m * n)

    pipe = TPipe()
    qA1 = TQue(TPosition.A1, 1)
    qB1 = TQue(TPosition.B1, 1)
    qA2 = TQue(TPosition.A2, 1)
    qB2 = TQue(TPosition.B2, 1)
    qC = TQue(TPosition.CO1, 1)
    pipe.InitBuffer(qA1, 1, EDGE * k * 2)
    pipe.InitBuffer(qB1, 1, k * EDGE * 2)
    pipe.InitBuffer(qA2, 1, EDGE * k * 2)
    pipe.InitBuffer(qB2, 1, k * EDGE * 2)
    pipe.InitBuffer(qC, 1, EDGE * EDGE * 4)
    fractals = EDGE * k * 2 // FRACTAL_BYTES

    for i in range(0, m, EDGE):
        for j in range(0, n, EDGE):
            a1 = qA1.AllocTensor(half)
            DataCopy(a1, aGm[i * k], EDGE * k)  # rows i .. i + 15 of A
            qA1.EnQue(a1)
            b1 = qB1.AllocTensor(half)  # columns j .. j + 15 of B: k blocks of 32 bytes
            DataCopy(b1, bGm[j], DataCopyParams(k, 1, (n - EDGE) // 16, 0))
            qB1.EnQue(b1)

            a1 = qA1.DeQue(half)
            a2 = qA2.AllocTensor(half)
            LoadData(a2, a1, LoadData2DParams(0, fractals, 1))
            qA1.FreeTensor(a1)
            qA2.EnQue(a2)
            b1 = qB1.DeQue(half)
            b2 = qB2.AllocTensor(half)
            LoadData(b2, b1, LoadData2DParams(0, fractals, 1))
            qB1.FreeTensor(b1)
            qB2.EnQue(b2)

            a2 = qA2.DeQue(half)
            b2 = qB2.DeQue(half)
            c1 = qC.AllocTensor(float)
            Mmad(c1, a2, b2, MmadParams(EDGE, EDGE, k, cmatrixInitVal=True))
            qA2.FreeTensor(a2)
            qB2.FreeTensor(b2)
            qC.EnQue(c1)

            c1 = qC.DeQue(float)
            Fixpipe(cGm[i * n + j], c1, FixpipeParamsV220(nSize=EDGE, mSize=EDGE, dstStride=n))
            qC.FreeTensor(c1)
