TILE = 256  # a small fixed tile instead of the tiling's tileLength


def add_kernel(x, y, z, tiling):
    blockLength = tiling.blockLength
    offset = blockLength * GetBlockIdx()
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x + offset, blockLength)
    yGm.SetGlobalBuffer(y + offset, blockLength)
    zGm.SetGlobalBuffer(z + offset, blockLength)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, 1)
    inQueueY = TQue(TPosition.VECIN, 1)
    outQueueZ = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(inQueueX, 1, TILE * 2)
    pipe.InitBuffer(inQueueY, 1, TILE * 2)
    pipe.InitBuffer(outQueueZ, 1, TILE * 2)
    done = 0
    while done < blockLength:
        count = min(TILE, blockLength - done)
        xLocal = inQueueX.AllocTensor(half)
        yLocal = inQueueY.AllocTensor(half)
        DataCopy(xLocal, xGm[done], count)
        DataCopy(yLocal, yGm[done], count)
        inQueueX.EnQue(xLocal)
        inQueueY.EnQue(yLocal)
        xLocal = inQueueX.DeQue(half)
        yLocal = inQueueY.DeQue(half)
        zLocal = outQueueZ.AllocTensor(half)
        Add(zLocal, xLocal, yLocal, count)
        outQueueZ.EnQue(zLocal)
        inQueueX.FreeTensor(xLocal)
        inQueueY.FreeTensor(yLocal)
        zLocal = outQueueZ.DeQue(half)
        DataCopy(zGm[done], zLocal, count)
        outQueueZ.FreeTensor(zLocal)
        done += count
