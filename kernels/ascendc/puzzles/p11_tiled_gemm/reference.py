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
    chunk = baseM * baseK  # halves of one k-chunk of the A block

    for r in range(GetBlockIdx(), M // baseM, GetBlockNum()):
        # A block r -> L1 once, chunk by chunk: chunk kc (baseM x baseK) at kc * chunk
        a1 = qA1.AllocTensor(half)
        for kc in range(K // baseK):
            DataCopy(a1[kc * chunk], aGm[r * baseM * K + kc * baseK],
                     DataCopyParams(baseM, baseK // 16, (K - baseK) // 16, 0))
        qA1.EnQue(a1)
        a1 = qA1.DeQue(half)

        for j in range(N // baseN):
            c1 = qC.AllocTensor(float)
            for kc in range(K // baseK):
                # B tile: rows kc * baseK .., columns j * baseN .. of B -> L1
                b1 = qB1.AllocTensor(half)
                DataCopy(b1, bGm[kc * baseK * N + j * baseN],
                         DataCopyParams(baseK, baseN // 16, (N - baseN) // 16, 0))
                qB1.EnQue(b1)

                a2 = qA2.AllocTensor(half)
                LoadData(a2, a1, LoadData2DParams(kc * chunk // FRACTAL, chunk // FRACTAL, 1))
                qA2.EnQue(a2)
                b1 = qB1.DeQue(half)
                b2 = qB2.AllocTensor(half)
                LoadData(b2, b1, LoadData2DParams(0, baseK * baseN // FRACTAL, 1))
                qB1.FreeTensor(b1)
                qB2.EnQue(b2)

                a2 = qA2.DeQue(half)
                b2 = qB2.DeQue(half)
                Mmad(c1, a2, b2, MmadParams(baseM, baseN, baseK, cmatrixInitVal=kc == 0))
                qA2.FreeTensor(a2)
                qB2.FreeTensor(b2)
            qC.EnQue(c1)
            c1 = qC.DeQue(float)
            Fixpipe(cGm[r * baseM * N + j * baseN], c1,
                    FixpipeParamsV220(nSize=baseN, mSize=baseM, dstStride=N))
            qC.FreeTensor(c1)
        qA1.FreeTensor(a1)
