TILE = 256  # elements per step: small steps, each a DataCopy and an Add of its own


def add_kernel(x, y, z, tiling):
    n = tiling.totalLength
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, n)
    yGm.SetGlobalBuffer(y, n)
    zGm.SetGlobalBuffer(z, n)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, 1)
    inQueueY = TQue(TPosition.VECIN, 1)
    outQueueZ = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(inQueueX, 1, TILE * 2)
    pipe.InitBuffer(inQueueY, 1, TILE * 2)
    pipe.InitBuffer(outQueueZ, 1, TILE * 2)
    done = 0
    while done < n:
        count = min(TILE, n - done)
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
