BUFFER_NUM = 1  # one buffer per queue: CopyIn, Compute and CopyOut never overlap


def softmax_kernel(x, y, tiling):
    cols = tiling.cols
    idx = GetBlockIdx()
    # former cores take formerRows rows each, the others tailRows (one fewer)
    if idx < tiling.formerNum:
        rows = tiling.formerRows
        first = idx * tiling.formerRows
    else:
        rows = tiling.tailRows
        first = tiling.formerNum * tiling.formerRows + (idx - tiling.formerNum) * tiling.tailRows
    if rows == 0:
        return
    xGm = GlobalTensor(float)
    xGm.SetGlobalBuffer(x + first * cols, rows * cols)
    yGm = GlobalTensor(float)
    yGm.SetGlobalBuffer(y + first * cols, rows * cols)

    pipe = TPipe()
    inQ = TQue(TPosition.VECIN, BUFFER_NUM)
    outQ = TQue(TPosition.VECOUT, BUFFER_NUM)
    workBuf = TBuf(TPosition.VECCALC)
    redBuf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(inQ, BUFFER_NUM, cols * 4)
    pipe.InitBuffer(outQ, BUFFER_NUM, cols * 4)
    pipe.InitBuffer(workBuf, cols * 4)
    pipe.InitBuffer(redBuf, 32)
    work = workBuf.Get(float)
    red = redBuf.Get(float)

    for r in range(rows):
        xl = inQ.AllocTensor(float)
        DataCopy(xl, xGm[r * cols], cols)
        inQ.EnQue(xl)

        xl = inQ.DeQue(float)
        yl = outQ.AllocTensor(float)
        ReduceMax(red, xl, work, cols)
        rowMax = red.GetValue(0)
        Adds(yl, xl, -rowMax, cols)  # x - max <= 0: exp cannot overflow
        Exp(yl, yl, cols)
        ReduceSum(red, yl, work, cols)
        rowSum = red.GetValue(0)
        Muls(yl, yl, 1.0 / rowSum, cols)
        inQ.FreeTensor(xl)
        outQ.EnQue(yl)

        yl = outQ.DeQue(float)
        DataCopy(yGm[r * cols], yl, cols)
        outQ.FreeTensor(yl)
