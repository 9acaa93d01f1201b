BUFFER_NUM = 2


def reduce_sum_kernel(x, work, out, tiling):
    # one core does everything: no partials, no SyncAll, the other cores idle
    if GetBlockIdx() != 0:
        return
    total, tile = tiling.totalLength, tiling.tileLength
    xGm = GlobalTensor(float)
    xGm.SetGlobalBuffer(x, total)
    outGm = GlobalTensor(float)
    outGm.SetGlobalBuffer(out, 8)

    pipe = TPipe()
    inQ = TQue(TPosition.VECIN, BUFFER_NUM)
    outQ = TQue(TPosition.VECOUT, 1)
    accBuf = TBuf(TPosition.VECCALC)
    tmpBuf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(inQ, BUFFER_NUM, tile * 4)
    pipe.InitBuffer(outQ, 1, 32)
    pipe.InitBuffer(accBuf, tile * 4)
    pipe.InitBuffer(tmpBuf, tile * 4)
    acc = accBuf.Get(float)
    tmp = tmpBuf.Get(float)

    Duplicate(acc, 0.0, tile)
    tiles = (total + tile - 1) // tile
    for i in range(tiles):
        n = min(tile, total - i * tile)
        xl = inQ.AllocTensor(float)
        DataCopy(xl, xGm[i * tile], n)
        inQ.EnQue(xl)
        xl = inQ.DeQue(float)
        Add(acc, acc, xl, n)
        inQ.FreeTensor(xl)

    res = outQ.AllocTensor(float)
    Duplicate(res, 0.0, 8)
    ReduceSum(res, acc, tmp, min(tile, total))
    outQ.EnQue(res)
    res = outQ.DeQue(float)
    DataCopy(outGm, res, 8)
    outQ.FreeTensor(res)
