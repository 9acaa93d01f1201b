FRACTAL_BYTES = 512  # LoadData moves whole 512-byte fractals (256 halves)


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
    pipe.InitBuffer(qA1, 1, m * k * 2)
    pipe.InitBuffer(qB1, 1, k * n * 2)
    # TODO: queues for A2 (L0A), B2 (L0B) and CO1 (L0C)

    # GM -> L1 (MTE2)
    a1 = qA1.AllocTensor(half)
    DataCopy(a1, aGm, m * k)
    qA1.EnQue(a1)
    b1 = qB1.AllocTensor(half)
    DataCopy(b1, bGm, k * n)
    qB1.EnQue(b1)

    a1 = qA1.DeQue(half)
    b1 = qB1.DeQue(half)
    # TODO: LoadData a1 -> L0A and b1 -> L0B, Mmad into L0C, Fixpipe L0C -> cGm
    qA1.FreeTensor(a1)
    qB1.FreeTensor(b1)
