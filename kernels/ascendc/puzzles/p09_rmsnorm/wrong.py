BUFFER_NUM = 2


def rmsnorm_kernel(x, gamma, y, tiling):
    # everything in fp16: no Cast, half the UB
    cols = tiling.cols
    idx = GetBlockIdx()
    if idx < tiling.formerNum:
        rows = tiling.formerRows
        first = idx * tiling.formerRows
    else:
        rows = tiling.tailRows
        first = tiling.formerNum * tiling.formerRows + (idx - tiling.formerNum) * tiling.tailRows
    if rows == 0:
        return
    xGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x + first * cols, rows * cols)
    yGm = GlobalTensor(half)
    yGm.SetGlobalBuffer(y + first * cols, rows * cols)
    gammaGm = GlobalTensor(half)
    gammaGm.SetGlobalBuffer(gamma, cols)

    pipe = TPipe()
    inQ = TQue(TPosition.VECIN, BUFFER_NUM)
    outQ = TQue(TPosition.VECOUT, BUFFER_NUM)
    gammaQ = TQue(TPosition.VECIN, 1)
    sqBuf = TBuf(TPosition.VECCALC)
    workBuf = TBuf(TPosition.VECCALC)
    redBuf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(inQ, BUFFER_NUM, cols * 2)
    pipe.InitBuffer(outQ, BUFFER_NUM, cols * 2)
    pipe.InitBuffer(gammaQ, 1, cols * 2)
    pipe.InitBuffer(sqBuf, cols * 2)
    pipe.InitBuffer(workBuf, cols * 2)
    pipe.InitBuffer(redBuf, 32)
    sq = sqBuf.Get(half)
    work = workBuf.Get(half)
    red = redBuf.Get(half)

    g = gammaQ.AllocTensor(half)
    DataCopy(g, gammaGm, cols)
    gammaQ.EnQue(g)
    g = gammaQ.DeQue(half)

    for r in range(rows):
        xl = inQ.AllocTensor(half)
        DataCopy(xl, xGm[r * cols], cols)
        inQ.EnQue(xl)

        xl = inQ.DeQue(half)
        yl = outQ.AllocTensor(half)
        Mul(sq, xl, xl, cols)
        ReduceSum(red, sq, work, cols)
        Muls(red, red, 1.0 / cols, 1)
        Adds(red, red, tiling.eps, 1)
        Rsqrt(red, red, 1)
        Muls(yl, xl, red.GetValue(0), cols)
        Mul(yl, yl, g, cols)
        inQ.FreeTensor(xl)
        outQ.EnQue(yl)

        yl = outQ.DeQue(half)
        DataCopy(yGm[r * cols], yl, cols)
        outQ.FreeTensor(yl)
    gammaQ.FreeTensor(g)
