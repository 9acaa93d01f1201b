FRACTAL = 256  # halves per 512-byte fractal (the unit of LoadData)


def gemm_kernel(a, b, c, tiling):
    M, N, K = tiling.M, tiling.N, tiling.K
    baseM, baseN, baseK = tiling.baseM, tiling.baseN, tiling.baseK
    aGm = GlobalTensor(half)
    aGm.SetGlobalBuffer(a, M * K)
    bGm = GlobalTensor(half)
    bGm.SetGlobalBuffer(b, K * N)
    cGm = GlobalTensor(half)
    cGm.SetGlobalBuffer(c, M * N)

    pipe = TPipe()
    qA1 = TQue(TPosition.A1, 1)  # the core's A block: baseM x K, kept for all its tiles
    qB1 = TQue(TPosition.B1, 2)
    qA2 = TQue(TPosition.A2, 2)
    qB2 = TQue(TPosition.B2, 2)
    qC = TQue(TPosition.CO1, 2)
    pipe.InitBuffer(qA1, 1, baseM * K * 2)
    pipe.InitBuffer(qB1, 2, baseK * baseN * 2)
    pipe.InitBuffer(qA2, 2, baseM * baseK * 2)
    pipe.InitBuffer(qB2, 2, baseK * baseN * 2)
    pipe.InitBuffer(qC, 2, baseM * baseN * 4)

    for r in range(GetBlockIdx(), M // baseM, GetBlockNum()):
        # A block r -> L1 once, chunk by chunk: chunk kc (baseM x baseK) at kc * chunk
        chunk = baseM * baseK
        a1 = qA1.AllocTensor(half)
        for kc in range(K // baseK):
            DataCopy(a1[kc * chunk], aGm[r * baseM * K + kc * baseK],
                     DataCopyParams(baseM, baseK // 16, (K - baseK) // 16, 0))
        qA1.EnQue(a1)
        a1 = qA1.DeQue(half)

        for j in range(N // baseN):
            # TODO: C tile (r, j): for each k-chunk, copy B's (baseK x baseN) tile to B1,
            #       LoadData both operands to L0A / L0B, Mmad into one CO1 tensor; then
            #       Fixpipe it to cGm[r * baseM * N + j * baseN] (dstStride N)
            col = j * baseN  # the tile's first column
        qA1.FreeTensor(a1)
