BUFFER_NUM = 2


def reduce_sum_kernel(x, work, out, tiling):
    total, block, tile = tiling.totalLength, tiling.blockLength, tiling.tileLength
    idx = GetBlockIdx()
    start = idx * block
    length = min(block, total - start)  # the last core's slice is shorter
    xGm = GlobalTensor(float)
    xGm.SetGlobalBuffer(x + start, length)
    workGm = GlobalTensor(float)
    workGm.SetGlobalBuffer(work)

    pipe = TPipe()
    inQ = TQue(TPosition.VECIN, BUFFER_NUM)
    outQ = TQue(TPosition.VECOUT, 1)
    accBuf = TBuf(TPosition.VECCALC)
    tmpBuf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(inQ, BUFFER_NUM, max(tile, 8 * GetBlockNum()) * 4)
    pipe.InitBuffer(outQ, 1, 32)
    pipe.InitBuffer(accBuf, tile * 4)
    pipe.InitBuffer(tmpBuf, tile * 4)
    acc = accBuf.Get(float)
    tmp = tmpBuf.Get(float)

    # 1. this core's slice: acc[j] += x[i * tile + j] tile by tile
    Duplicate(acc, 0.0, tile)
    for i in range(length // tile):
        n = tile
        xl = inQ.AllocTensor(float)
        DataCopy(xl, xGm[i * tile], n)
        inQ.EnQue(xl)
        xl = inQ.DeQue(float)
        Add(acc, acc, xl, n)
        inQ.FreeTensor(xl)

    # 2. its partial sum -> one 32-byte block of the workspace
    part = outQ.AllocTensor(float)
    Duplicate(part, 0.0, 8)
    ReduceSum(part, acc, tmp, min(tile, length))
    outQ.EnQue(part)
    part = outQ.DeQue(float)
    DataCopy(workGm[8 * idx], part, 8)
    outQ.FreeTensor(part)

    # 3. every core has written its partial: block 0 adds them up
    SyncAll()
    if idx == 0:
        outGm = GlobalTensor(float)
        outGm.SetGlobalBuffer(out, 8)
        count = 8 * GetBlockNum()
        parts = inQ.AllocTensor(float)
        DataCopy(parts, workGm, count)
        inQ.EnQue(parts)
        parts = inQ.DeQue(float)
        res = outQ.AllocTensor(float)
        Duplicate(res, 0.0, 8)
        ReduceSum(res, parts, tmp, count)
        inQ.FreeTensor(parts)
        outQ.EnQue(res)
        res = outQ.DeQue(float)
        DataCopy(outGm, res, 8)
        outQ.FreeTensor(res)
