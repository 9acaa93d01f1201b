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
    outGm = GlobalTensor(float)
    outGm.SetGlobalBuffer(out, 8)

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
    Duplicate(acc, 0.0, tile)

    # TODO 1: add this core's slice into acc, tile by tile (CopyIn, then Add);
    #         the slice's last tile may be partial
    # TODO 2: ReduceSum acc into a VECOUT tensor and copy that 32-byte block to
    #         workGm[8 * idx]
    # TODO 3: wait for every core, then let block 0 sum the partials of the workspace and
    #         write the total to out[0] (and 0 to out[1:8])
